"""``python -m gradflow``: the same as the ``gradflow`` command (the app, or a subcommand)."""
import sys

from gradflow.explorer.__main__ import main

if __name__ == "__main__":
    sys.exit(main())

import sys

from core.native import main

sys.exit(main())

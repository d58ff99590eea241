import sys

from gradflow.core.native import main

sys.exit(main())

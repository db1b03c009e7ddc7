import sys

from vlab.cli import main

sys.exit(main())

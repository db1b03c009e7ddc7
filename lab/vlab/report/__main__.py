import sys

from vlab.report import main

sys.exit(main())

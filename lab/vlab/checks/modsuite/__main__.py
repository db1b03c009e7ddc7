import sys

from vlab.checks.modsuite import main

sys.exit(main(sys.argv[1:]))

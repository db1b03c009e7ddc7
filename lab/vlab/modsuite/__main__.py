import sys

from vlab.modsuite import main

sys.exit(main(sys.argv[1:]))

"""`python -m npumon.daemon.sources.dcmi.child LIBRARY`: the DCMI helper process."""

import sys

from npumon.daemon.sources.dcmi.child.helper import main

sys.exit(main(sys.argv[1:]))

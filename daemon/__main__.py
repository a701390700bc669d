"""`python -m npumon.daemon`."""

import sys

from npumon.daemon.cli import main

sys.exit(main())

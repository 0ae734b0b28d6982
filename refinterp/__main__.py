"""`python -m refinterp` runs the command line."""

import sys

from refinterp.cli import main

sys.exit(main())

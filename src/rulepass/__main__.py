"""`python -m rulepass` runs the command line."""

import sys

from rulepass.cli import main

sys.exit(main())

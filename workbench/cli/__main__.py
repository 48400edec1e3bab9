"""`python -m workbench.cli ARGS`: the `workbench` command."""

import sys

from workbench.cli import main

sys.exit(main())

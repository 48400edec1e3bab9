"""`python -m workbench ARGS`: the `workbench` command (what `torchrun -m workbench train CONFIG` runs)."""

import sys

from workbench.cli import main

sys.exit(main())

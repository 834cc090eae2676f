"""`python -m tfolab`: the same as the `tfolab` command."""

import sys

from tfolab.cli import main

sys.exit(main())

"""``python -m tvm_explorer`` runs the command line."""

import sys

from tvm_explorer.cli import main

sys.exit(main())

"""``python -m tvm_explorer``: the ``tvm-explorer`` command line."""

import sys

from .cli import main

sys.exit(main())

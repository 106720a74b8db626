"""``python -m tvm_explorer.lsp [--tcp HOST:PORT]``: run the language server."""

import sys

from .cli import main

sys.exit(main())

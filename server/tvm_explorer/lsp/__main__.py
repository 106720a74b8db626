"""``python -m tvm_explorer.lsp [--tcp HOST:PORT]``: run the language server."""

import sys

from tvm_explorer.lsp.launch import main

sys.exit(main())

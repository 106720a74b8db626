"""The LSP glue: the only package that imports pygls or lsprotocol."""

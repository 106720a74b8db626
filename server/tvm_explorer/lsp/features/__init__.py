"""One LSP feature per module; ``lsp.server`` wires them to the protocol."""

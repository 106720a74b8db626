"""``tvm-explorer serve``: the language server on stdio (or TCP with ``--tcp``); the server
itself and its options live in ``lsp/launch.py``."""

from __future__ import annotations


def add_parser(sub) -> None:
    from tvm_explorer.lsp.launch import add_parser as add_serve

    add_serve(sub)

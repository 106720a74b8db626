"""The smallest language server on pygls 2 + lsprotocol (one hover): the memory floor any
server on that stack starts from, measured beside ours by ``lsp_latency.py``."""

from lsprotocol import types
from pygls.lsp.server import LanguageServer

server = LanguageServer("bare-pygls", "1")


@server.feature(types.TEXT_DOCUMENT_HOVER)
def hover(_params):
    """Always the same answer."""
    return types.Hover(contents="bare")


if __name__ == "__main__":
    server.start_io()

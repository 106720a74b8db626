"""Open, changed and closed documents: the editor's text of bundle documents, so that no
answer is computed from ranges an edit invalidated."""

from __future__ import annotations

from lsprotocol import types

from ..session import OpenDocument, Session, uri_to_path


class DocumentTracker:
    """Mirrors the editor's text of every open document (bundle or not yet loaded)."""

    def __init__(self, server, session: Session, watcher):
        self.server = server
        self.session = session
        self.watcher = watcher

    def _current_text(self, uri: str) -> str:
        return self.server.workspace.get_text_document(uri).source

    def opened(self, params: types.DidOpenTextDocumentParams) -> None:
        """``textDocument/didOpen``: remember the text; load its bundle if new."""
        path = uri_to_path(params.text_document.uri)
        if path is None:
            return
        self.session.open[path] = OpenDocument(params.text_document.uri, params.text_document.text)
        self.watcher.document_opened(params.text_document.uri)

    def changed(self, params: types.DidChangeTextDocumentParams) -> None:
        """``textDocument/didChange``: take the text as pygls applied the changes."""
        path = uri_to_path(params.text_document.uri)
        opened = self.session.open.get(path) if path else None
        if opened is not None:
            opened.set_text(self._current_text(params.text_document.uri))

    def closed(self, params: types.DidCloseTextDocumentParams) -> None:
        """``textDocument/didClose``: the bundle text is what counts again."""
        path = uri_to_path(params.text_document.uri)
        if path is not None:
            self.session.open.pop(path, None)

"""Open, changed and closed documents: the editor's text of bundle documents, so that no
answer is computed from ranges an edit invalidated. The text is kept here (edits.py), not in
pygls' workspace (see ``ExplorerProtocol``)."""

from __future__ import annotations

from lsprotocol import types

from tvm_explorer.lsp.edits import EditableText
from tvm_explorer.lsp.shared import OpenDocument, Session, uri_to_path


class DocumentTracker:
    """Mirrors the editor's text of every open document (bundle or not yet loaded)."""

    def __init__(self, server, session: Session, watcher):
        self.server = server
        self.session = session
        self.watcher = watcher

    def opened(self, params: types.DidOpenTextDocumentParams) -> None:
        """``textDocument/didOpen``: remember the text; load its bundle if new."""
        path = uri_to_path(params.text_document.uri)
        if path is None:
            return
        self.session.open[path] = OpenDocument(params.text_document.uri, EditableText(params.text_document.text))
        self.watcher.document_opened(params.text_document.uri)

    def changed(self, params: types.DidChangeTextDocumentParams) -> None:
        """``textDocument/didChange``: apply the changes to the lines they touch (edits.py)."""
        path = uri_to_path(params.text_document.uri)
        opened = self.session.open.get(path) if path else None
        if opened is None:
            return
        for change in params.content_changes:
            if isinstance(change, types.TextDocumentContentChangePartial):
                r = change.range
                opened.document.replace(
                    (r.start.line, r.start.character), (r.end.line, r.end.character), change.text, self.session.encoding
                )
            else:
                opened.document.replace_all(change.text)
        opened.edited()

    def closed(self, params: types.DidCloseTextDocumentParams) -> None:
        """``textDocument/didClose``: the bundle text is what counts again."""
        path = uri_to_path(params.text_document.uri)
        if path is not None:
            self.session.open.pop(path, None)

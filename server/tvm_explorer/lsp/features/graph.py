"""``tvmExplorer/modelGraph``: a bundle's graph document (``graphview/document.py``), which the
VS Code "Show Model Graph" webview draws, with the bundle's root URI to make the places'
URIs from (docs/lsp-protocol.md)."""

from __future__ import annotations

from typing import Any

from tvm_explorer.graphview.document import graph_document
from tvm_explorer.lsp.protocol import ModelGraphParams
from tvm_explorer.lsp.shared import OffLoop, Session


class ModelGraph:
    """Answers ``tvmExplorer/modelGraph``."""

    def __init__(self, session: Session):
        self.session = session

    def model_graph(self, params: ModelGraphParams | None) -> dict[str, Any] | OffLoop:
        """``{"root": bundle URI, "document": graph document}``, or ``{"error": why}``."""
        view = self.session.bundle_view(params.bundle) if params else None
        if view is None:
            return {"error": "no loaded bundle holds this file"}
        root = self.session.uri_of_root(view.root)
        encoding = self.session.encoding
        # Places and excerpts of every layer: tens of milliseconds for a MediaPipe model, off
        # the event loop so that hovers and definitions are not kept waiting.
        return OffLoop(lambda: {"root": root, "document": graph_document(view, encoding=encoding)})

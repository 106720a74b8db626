"""``tvmExplorer/modelGraph``: a bundle's graph document (``graphview/document.py``), which the
VS Code "Show Model Graph" webview draws, with the bundle's root URI to make the places'
URIs from (docs/lsp-protocol.md)."""

from __future__ import annotations

from tvm_explorer.graphview.document import graph_document
from tvm_explorer.lsp.protocol import ModelGraphParams, ModelGraphResult, RequestFailed
from tvm_explorer.lsp.shared import Feature, OffLoop


class ModelGraph(Feature):
    """Answers ``tvmExplorer/modelGraph``."""

    def model_graph(self, params: ModelGraphParams | None) -> OffLoop:
        """The bundle's URI and graph document, made off the event loop (``RequestFailed``:
        no loaded bundle holds the file)."""
        view = self.session.bundle_view(params.bundle) if params else None
        if view is None:
            raise RequestFailed(f"no loaded bundle holds {params.bundle if params else 'this file'}")
        root = self.session.uri_of_root(view.root)
        encoding = self.session.encoding
        # Places and excerpts of every layer: tens of milliseconds for a MediaPipe model, off
        # the event loop so that hovers and definitions are not kept waiting.
        return OffLoop(lambda: ModelGraphResult(root=root, document=graph_document(view, encoding=encoding)))

"""``textDocument/declaration`` and ``tvmExplorer/previousStage``: one IR level back."""

from __future__ import annotations

from lsprotocol import types

from tvm_explorer.lsp.shared import Feature
from tvm_explorer.navigation.stages import previous_stage


class PreviousStage(Feature):
    """Go to the same computation one IR level back (code -> TIR -> Relax -> model)."""

    def previous_stage(self, params: types.TextDocumentPositionParams) -> list[types.Location]:
        """Locations one stage back (see docs/navigation.md); [] when there is none."""
        if params is None:
            return []
        q = self.session.query(params.text_document.uri, params.position)
        if q is None:
            return []
        return self.session.locations(q.view, previous_stage(q.view, q.path, q.offset, q.keep))

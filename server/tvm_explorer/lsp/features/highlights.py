"""``textDocument/documentHighlight``: a name's reads and writes in its document."""

from __future__ import annotations

from lsprotocol import types

from tvm_explorer.lsp.shared import Feature
from tvm_explorer.navigation.irsymbols.navigate import highlights


class DocumentHighlights(Feature):
    """Mark every occurrence of the name under the cursor (Write for definitions and stores)."""

    def highlights(self, params: types.DocumentHighlightParams) -> list[types.DocumentHighlight]:
        """Highlights of the name at the position ([] when it is not on a known name)."""
        q = self.session.query(params.text_document.uri, params.position)
        if q is None:
            return []
        ranger = self.session.ranger(q.view, q.path)
        out = []
        for h in highlights(q.view, q.path, q.offset):
            rng = ranger(h.start, h.end)
            if rng is not None:
                kind = types.DocumentHighlightKind.Write if h.write else types.DocumentHighlightKind.Read
                out.append(types.DocumentHighlight(range=rng, kind=kind))
        return out

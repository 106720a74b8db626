"""``textDocument/hover``: origin layers, stage/pass and schedule step, as Markdown."""

from __future__ import annotations

from lsprotocol import types

from tvm_explorer.lsp.shared import Feature
from tvm_explorer.navigation.hover import hover


class Hover(Feature):
    """Say where the text under the mouse came from."""

    def hover(self, params: types.HoverParams) -> types.Hover | None:
        """Markdown hover over the innermost indexed range, or None."""
        q = self.session.query(params.text_document.uri, params.position)
        if q is None:
            return None
        found = hover(q.view, q.path, q.offset, q.keep)
        if found is None:
            return None
        text, rng = found
        return types.Hover(
            contents=types.MarkupContent(kind=types.MarkupKind.Markdown, value=text),
            range=self.session.range(q.view, q.path, rng.start, rng.end),
        )

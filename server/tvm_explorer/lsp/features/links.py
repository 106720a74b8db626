"""``textDocument/documentLink``: Relax calls to their PrimFunc, scheduled loops to traces."""

from __future__ import annotations

from lsprotocol import types

from tvm_explorer.lsp.shared import Feature
from tvm_explorer.navigation.links import document_links


class DocumentLinks(Feature):
    """Clickable PrimFunc names and schedule-trace links."""

    def links(self, params: types.DocumentLinkParams) -> list[types.DocumentLink]:
        """Links of a bundle document; a target position is given as ``#L<line>,<col>``."""
        found = self.session.locate(params.text_document.uri)
        if found is None:
            return []
        view, path = found
        out = []
        for link in document_links(view, path):
            rng = self.session.range(view, path, link.start, link.end)
            if rng is None:
                continue
            target = self.session.uri(view, link.target)
            if link.target_line is not None:
                target += f"#L{link.target_line[0] + 1},{link.target_line[1] + 1}"
            elif link.target_offset is not None:
                line, col = view.line_index(link.target, self.session.encoding).position(link.target_offset)
                target += f"#L{line + 1},{col + 1}"
            tooltip = link.tooltip if self.session.link_tooltips else None
            out.append(types.DocumentLink(range=rng, target=target, tooltip=tooltip))
        return out

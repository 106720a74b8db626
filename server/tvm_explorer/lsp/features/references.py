"""``textDocument/references``: on a name, its uses in the document; elsewhere the layer's
places in the model, the last Relax and TIR documents and the generated code."""

from __future__ import annotations

from lsprotocol import types

from tvm_explorer.lsp.shared import Feature
from tvm_explorer.navigation.irsymbols.navigate import symbol_references
from tvm_explorer.navigation.places import layers_at_position, reference_map


class References(Feature):
    """List every range sharing the origins of a position."""

    def references(self, params: types.ReferenceParams) -> list[types.Location]:
        """On a name: its uses (its definition too with ``includeDeclaration``). Elsewhere:
        the layers' model entries, then their places in the last Relax document, the last
        TIR document and the generated code (the every-pass list is layerPlaces)."""
        q = self.session.query(params.text_document.uri, params.position)
        if q is None:
            return []
        include = bool(params.context and params.context.include_declaration)
        places = symbol_references(q.view, q.path, q.offset, include)
        if places is not None:
            return self.session.locations(q.view, places)
        places = reference_map(q.view, layers_at_position(q.view, q.path, q.offset, q.keep))
        if not include:  # the model entries are the layers' declarations
            places = [p for p in places if p.path != q.view.model_path]
        return self.session.locations(q.view, places)

"""``tvmExplorer/previousPass`` / ``nextPass`` (pass-by-pass stepping) and
``tvmExplorer/layerPlaces`` (every place of a layer, per stage and pass)."""

from __future__ import annotations

from lsprotocol import types

from tvm_explorer.lsp.protocol import LayerPlaceInfo, LayerPlacesResult, LayerRef, PassRef
from tvm_explorer.lsp.shared import Feature
from tvm_explorer.navigation.passes import next_pass, previous_pass
from tvm_explorer.navigation.places import layer_places, layers_of, places_summary
from tvm_explorer.navigation.sources import layer_labels


class PassSteps(Feature):
    """Step the computation at a position to the previous or next pass that changed it."""

    def previous_pass(self, params: types.TextDocumentPositionParams | None) -> list[types.Location]:
        """Locations in the nearest earlier pass document where the text differs ([] at the
        first)."""
        q = self.session.query(params.text_document.uri, params.position) if params else None
        if q is None:
            return []
        return self.session.locations(q.view, previous_pass(q.view, q.path, q.offset, q.keep))

    def next_pass(self, params: types.TextDocumentPositionParams | None) -> list[types.Location]:
        """Locations in the nearest later pass document where the text differs ([] at the
        generated code)."""
        q = self.session.query(params.text_document.uri, params.position) if params else None
        if q is None:
            return []
        return self.session.locations(q.view, next_pass(q.view, q.path, q.offset, q.keep))

    def layer_places(self, params: types.TextDocumentPositionParams | None) -> LayerPlacesResult:
        """The layer(s) of a position (anywhere on a line: its indentation too) and every place
        of them, in pipeline order."""
        q = self.session.line_query(params.text_document.uri, params.position) if params else None
        if q is None:
            return LayerPlacesResult([], [])
        layers = layers_of(q.view, q.path, q.offset, q.keep)
        refs = [LayerRef(lay.subgraph, lay.op_index, lay.opcode, lay.display_name) for lay in layers]
        out = []
        for sp in layer_places(q.view, [lay.id for lay in layers]):
            loc = self.session.location(q.view, sp.place)
            if loc is None:
                continue
            step = (
                PassRef(sp.pass_index, sp.pass_name) if sp.pass_index is not None and sp.pass_name is not None else None
            )
            out.append(
                LayerPlaceInfo(
                    sp.stage, step, loc.uri, loc.range, sp.last_of_stage, sp.changed, sp.role, sp.function, sp.note
                )
            )
        summary = places_summary(q.view, [lay.id for lay in layers]) if layers else ""
        return LayerPlacesResult(refs, out, summary, layer_labels(layers))

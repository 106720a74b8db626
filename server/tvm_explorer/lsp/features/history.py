"""``tvmExplorer/layerHistory``: every pass that changed the code of the layer(s) at a position
(history/), each with the layer's own lines before and after, for a layer-only diff."""

from __future__ import annotations

from lsprotocol import types

from tvm_explorer.history.code import LayerCode
from tvm_explorer.history.steps import layer_history
from tvm_explorer.lsp.protocol import (
    HistoryLines,
    HistoryMark,
    HistorySide,
    HistoryStep,
    LayerHistoryResult,
    PassRef,
    StageLayer,
)
from tvm_explorer.lsp.shared import Feature, OffLoop
from tvm_explorer.navigation.places import layers_of
from tvm_explorer.navigation.sources import layer_labels
from tvm_explorer.navigation.view import BundleView


class LayerHistory(Feature):
    """The history of the layer(s) a position stands for: one layer on a model entry or one
    of its statements, the whole fused group on a fused kernel's header."""

    def layer_history(self, params: types.TextDocumentPositionParams | None) -> LayerHistoryResult | OffLoop:
        """The steps of the layers at the position (none: no layer there); a history asked for
        the first time is made off the event loop (tens of milliseconds: hovers go on)."""
        q = self.session.line_query(params.text_document.uri, params.position) if params else None
        if q is None:
            return LayerHistoryResult([], [])
        layers = layers_of(q.view, q.path, q.offset, q.keep)
        if not layers:
            return LayerHistoryResult([], [])
        return OffLoop(lambda: self._answer(q.view, [lay.id for lay in layers]))

    def _answer(self, view: BundleView, layer_ids: list[int]) -> LayerHistoryResult:
        history = layer_history(view, layer_ids)
        steps = []
        for i, step in enumerate(history.steps):
            steps.append(
                HistoryStep(
                    _pass(step.pass_index, step.pass_name),
                    step.stage,
                    step.summary,
                    list(step.changes),
                    HistoryLines(step.before.line_count, step.after.line_count, step.added, step.removed),
                    self._side(view, step.before),
                    self._side(view, step.after),
                    [m.kind for m in history.marks_of(i)],
                )
            )
        return LayerHistoryResult(
            [StageLayer(lay.id, lay.subgraph, lay.op_index, lay.opcode, lay.display_name) for lay in history.layers],
            steps,
            history.passes,
            max(0, history.passes - len(steps)),
            [HistoryMark(m.kind, m.text, _pass(m.pass_index, m.pass_name), m.step) for m in history.marks],
            layer_labels(list(history.layers)),
            self.session.uri_of_root(view.root),
        )

    def _side(self, view: BundleView, code: LayerCode) -> HistorySide:
        # Lines of the files as saved: the diff shows the bundle's files, whatever is edited.
        convert = self.session.ranger(view, code.path, as_saved=True)
        ranges = [r for start, end, _ in code.pieces if (r := convert(start, end)) is not None]
        return HistorySide(self.session.uri(view, code.path), ranges)


def _pass(index: int | None, name: str) -> PassRef | None:
    return PassRef(index, name) if index is not None else None

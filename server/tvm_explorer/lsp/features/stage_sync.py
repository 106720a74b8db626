"""``tvmExplorer/stageDocuments`` and ``tvmExplorer/stageRanges``: the stages of a bundle side
by side, and the ranges of a position's layers in each (navigation/stage_sync.py)."""

from __future__ import annotations

from lsprotocol import types

from tvm_explorer.lsp.protocol import (
    StageDocumentInfo,
    StageDocumentsParams,
    StageDocumentsResult,
    StageLayer,
    StageNote,
    StageRangesInDocument,
    StageRangesResult,
)
from tvm_explorer.lsp.shared import Feature
from tvm_explorer.navigation.stage_sync import stage_documents, stage_ranges


class StageSync(Feature):
    """The stage documents of a bundle, and what of them a position corresponds to."""

    def stage_documents(self, params: StageDocumentsParams | None) -> StageDocumentsResult:
        """Model document, last Relax, final TIR, generated code (empty for no bundle)."""
        view = self.session.bundle_view(params.bundle) if params else None
        if view is None:
            return StageDocumentsResult([])
        return StageDocumentsResult(
            [StageDocumentInfo(d.stage, self.session.uri(view, d.path), d.path) for d in stage_documents(view)]
        )

    def stage_ranges(self, params: types.TextDocumentPositionParams | None) -> StageRangesResult:
        """The layers at a position and their ranges in every other stage document."""
        q = self.session.line_query(params.text_document.uri, params.position) if params else None
        if q is None:
            return StageRangesResult([], [])
        found = stage_ranges(q.view, q.path, q.offset, q.keep)
        layers = [q.view.bundle.layers[i] for i in found.layer_ids]
        out = []
        for doc in found.documents:
            # ``locations`` remembers converted places of unedited documents (a cursor moving
            # inside one kernel asks for the same hundreds of statements again and again).
            ranges = [loc.range for loc in self.session.locations(q.view, doc.places)]
            focus = self.session.location(q.view, doc.focus) if doc.focus is not None else None
            notes = [
                StageNote(loc.range, text)
                for place, text in doc.notes
                if (loc := self.session.location(q.view, place)) is not None
            ]
            out.append(
                StageRangesInDocument(
                    doc.stage,
                    self.session.uri(q.view, doc.path),
                    ranges,
                    doc.truncated,
                    focus.range if focus is not None else None,
                    notes,
                )
            )
        return StageRangesResult(
            [StageLayer(lay.id, lay.subgraph, lay.op_index, lay.opcode, lay.display_name) for lay in layers], out
        )

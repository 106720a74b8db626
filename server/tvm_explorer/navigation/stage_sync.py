"""Stages side by side: which documents of a bundle are "the stages" (the model document, the
last Relax, the final TIR, the generated code), and for a position in any document, the ranges
of the same layers in each of them (``tvmExplorer/stageDocuments``, ``tvmExplorer/stageRanges``).

The ranges are the layers' reference map (``places.reference_map``: their model entries, the
Relax bindings computing them, their innermost TIR and generated-code statements), so a line of
a fused kernel answers for every layer it holds, and a layer lowered to several kernels answers
with the statements of each. Offsets throughout; the LSP edge converts them.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import PurePosixPath

from tvm_explorer.navigation.places import FUNCTION_KINDS, reference_map
from tvm_explorer.navigation.provenance import layers_at
from tvm_explorer.navigation.stages import main_first
from tvm_explorer.navigation.view import BundleView, Keep, Place, keep_all

STAGE_ORDER = ("model", "relax", "tir", "code")

# The generated code a side-by-side view shows: the kernels (CUDA device code, C) before the
# host code (LLVM IR), which only launches them on CUDA.
_CODE_SUFFIX_RANK = {".cu": 0, ".c": 1, ".cc": 1, ".ll": 2}

MAX_SPANS_PER_DOCUMENT = 5000
"""Most ranges answered in one document (a position on a whole-model function names every
layer: past this many statements a highlight tells nothing, and the answer stays small)."""


@dataclass(frozen=True)
class StageDocument:
    """One stage document of a bundle."""

    stage: str
    path: str


@dataclass(frozen=True)
class StageSpans:
    """The ranges ``[start, end)`` of the position's layers in one stage document, in document
    order, none inside another; ``truncated``: more than ``MAX_SPANS_PER_DOCUMENT`` were found."""

    stage: str
    path: str
    spans: list[tuple[int, int]]
    truncated: bool = False


@dataclass(frozen=True)
class StageRanges:
    """The layers of a position (main operators first) and their ranges in every stage
    document but the queried one."""

    layer_ids: list[int]
    documents: list[StageSpans]


def stage_documents(view: BundleView) -> list[StageDocument]:
    """The model document, the last Relax document, the last TIR document, then every
    generated-code document, the main one first (CUDA's device code before its host code)."""
    last: dict[str, str] = {}
    code: list[str] = []
    for doc in view.bundle.documents:
        if doc.stage == "code":
            code.append(doc.path)
        elif doc.stage in STAGE_ORDER:
            last[doc.stage] = doc.path
    out = [StageDocument(stage, last[stage]) for stage in STAGE_ORDER[:3] if stage in last]
    code.sort(key=lambda p: _CODE_SUFFIX_RANK.get(PurePosixPath(p).suffix, 3))  # stable: bundle order within a rank
    return out + [StageDocument("code", p) for p in code]


def stage_layers(view: BundleView, path: str, offset: int, keep: Keep = keep_all) -> list[int]:
    """The layers the text at ``offset`` stands for, main operators first. In the model
    document anything inside a layer's entry (its tensor names too) is that layer; elsewhere
    the origins of the innermost range that has any."""
    doc = view.bundle.document(path)
    if doc is not None and doc.stage == "model":
        for rng in view.enclosing(path, offset, keep):
            layer = view.layer_of_key(rng.key)
            if layer is not None:
                return [layer.id]
    return main_first(view, [o.layer.id for o in layers_at(view, path, offset, keep)])


def stage_ranges(view: BundleView, path: str, offset: int, keep: Keep = keep_all) -> StageRanges:
    """The ranges of the position's layers in each stage document other than ``path`` (every
    one listed, with no ranges when the layers left nothing there); no documents when the
    position has no origin."""
    layer_ids = stage_layers(view, path, offset, keep)
    if not layer_ids:
        return StageRanges([], [])
    per_path: dict[str, list[tuple[int, int]]] = {}
    for place in reference_map(view, layer_ids):
        per_path.setdefault(place.path, []).append(_tight(view, place))
    out = []
    for doc in stage_documents(view):
        if doc.path == path:
            continue
        spans = _outermost(per_path.get(doc.path, []))
        out.append(StageSpans(doc.stage, doc.path, spans[:MAX_SPANS_PER_DOCUMENT], len(spans) > MAX_SPANS_PER_DOCUMENT))
    return StageRanges(layer_ids, out)


def _tight(view: BundleView, place: Place) -> tuple[int, int]:
    """The span to highlight for a place: its own, but only the header of a whole function
    (a CUDA host launcher, a PrimFunc none of whose statements are indexed): down to the end
    of the line naming it."""
    if place.kind not in FUNCTION_KINDS:
        return place.start, place.end
    text = view.bundle.text(place.path)
    name = place.key.partition(":")[2] or place.key
    at = text.find(name, place.start, place.end) if name else -1
    end = text.find("\n", max(at, place.start), place.end)
    return place.start, place.end if end < 0 else end


def _outermost(spans: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """Spans in document order, each once, those inside an earlier one dropped."""
    out: list[tuple[int, int]] = []
    for start, end in sorted(set(spans), key=lambda s: (s[0], -s[1])):
        if out and end <= out[-1][1]:
            continue
        out.append((start, end))
    return out

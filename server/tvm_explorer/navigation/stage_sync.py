"""Stages side by side: which documents of a bundle are "the stages" (the model document, the
last Relax, the final TIR, the generated code), and for a position in any document, the ranges
of the same layers in each of them (``tvmExplorer/stageDocuments``, ``tvmExplorer/stageRanges``).

The ranges are the layers' reference map (``places.reference_map``: their model entries, the
Relax bindings computing them, their innermost TIR and generated-code statements), so a line of
a fused kernel answers for every layer it holds, and a layer lowered to several kernels answers
with the statements of each. Offsets throughout; the LSP edge converts them.
"""

from __future__ import annotations

import threading
import weakref
from dataclasses import dataclass, field, replace
from pathlib import PurePosixPath

from tvm_explorer.navigation.kernels import FUNCTION_KINDS, output_functions, place_unit
from tvm_explorer.navigation.places import part_notes, reference_map
from tvm_explorer.navigation.provenance import layers_at
from tvm_explorer.navigation.stages import main_first
from tvm_explorer.navigation.view import BundleView, Keep, Place, keep_all

STAGE_ORDER = ("model", "relax", "tir", "code")

# The generated code a side-by-side view shows: the kernels (CUDA device code, C) before the
# host code (LLVM IR), which only launches them on CUDA.
_CODE_SUFFIX_RANK = {".cu": 0, ".sass": 1, ".c": 1, ".cc": 1, ".ll": 2}

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
    """The places of the position's layers in one stage document, in document order, none
    inside another, each cut to what is highlighted (``_tight``); ``truncated``: more than
    ``MAX_SPANS_PER_DOCUMENT`` were found."""

    stage: str
    path: str
    places: list[Place]
    truncated: bool = False
    focus: Place | None = None
    """What the column shows: the same statement as the position's (an equal key), else the
    first layer's own kernel (from its first to its last place there; its model entry, the
    Relax binding computing its output) — never a function holding only its input dequantize,
    nor an argument-checking wrapper."""
    notes: list[tuple[Place, str]] = field(default_factory=list)
    """The first place in each function that holds only a part of the layers, and what it is
    (``kernels.part_note``)."""


@dataclass(frozen=True)
class StageRanges:
    """The layers of a position (main operators first) and their places in every stage
    document but the queried one."""

    layer_ids: list[int]
    documents: list[StageSpans]


_CACHES: weakref.WeakKeyDictionary[BundleView, dict] = weakref.WeakKeyDictionary()
_LOCK = threading.Lock()
_KEPT = 1024  # sets of layers remembered per bundle (a cursor moving in a kernel asks the same)


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
    """The places of the position's layers in each stage document other than ``path`` (every
    one listed, with no places when the layers left nothing there); no documents when the
    position has no origin. The layers whose output the text at the position computes come
    first (a fused kernel's own layer before the next layer's input dequantize it holds)."""
    layer_ids = stage_layers(view, path, offset, keep)
    if not layer_ids:
        return StageRanges([], [])
    ranges = view.enclosing(path, offset, keep)
    inner = next((r for r in ranges if r.origin_set), None)
    if inner is not None and _stage(view, path) != "model":
        own = {o.layer.id for o in view.bundle.origins(inner.origin_set) if o.is_output}
        layer_ids = sorted(layer_ids, key=lambda lid: lid not in own)  # stable: main first within
    docs = _stage_spans(view, layer_ids)
    out = []
    for doc in docs:
        if doc.path == path:
            continue
        same = _same_statement(doc, inner.key) if inner is not None and inner.kind == "stmt" else None
        out.append(replace(doc, focus=same) if same is not None else doc)
    return StageRanges(layer_ids, out)


def _stage(view: BundleView, path: str) -> str:
    doc = view.bundle.document(path)
    return doc.stage if doc else ""


def _same_statement(doc: StageSpans, key: str) -> Place | None:
    """The place of ``doc`` carrying the statement key ``key``: the same computation."""
    return next((p for p in doc.places if p.key == key), None)


def _stage_spans(view: BundleView, layer_ids: list[int]) -> list[StageSpans]:
    """The layers' places in every stage document, remembered per set of layers and first
    layer (whose kernel each document shows)."""
    key = (layer_ids[0], tuple(sorted(layer_ids)))
    with _LOCK:
        cache = _CACHES.setdefault(view, {})
        got = cache.get(key)
    if got is not None:
        return got
    per_path: dict[str, list[Place]] = {}
    for place in reference_map(view, layer_ids):
        per_path.setdefault(place.path, []).append(place)
    got = []
    for doc in stage_documents(view):
        places = _outermost(_tight(view, doc.path, per_path.get(doc.path, [])))
        shown = places[:MAX_SPANS_PER_DOCUMENT]
        notes = _notes(view, doc, layer_ids, shown)
        got.append(
            StageSpans(
                doc.stage,
                doc.path,
                shown,
                len(places) > MAX_SPANS_PER_DOCUMENT,
                _home(view, doc, layer_ids[0], shown),
                notes,
            )
        )
    with _LOCK:
        if len(cache) >= _KEPT:
            cache.clear()
        cache[key] = got
    return got


def _home(view: BundleView, doc: StageDocument, layer_id: int, places: list[Place]) -> Place | None:
    """Where the layer is computed in the document: its model entry; else its places in the
    function computing its output (one span from the first to the last), else the first place."""
    if not places:
        return None
    if doc.stage == "model":
        return next((p for p in places if getattr(view.layer_of_key(p.key), "id", None) == layer_id), places[0])
    kernels = output_functions(view, doc.path, [layer_id])
    own = [p for p in places if p.kind not in FUNCTION_KINDS and place_unit(view, p) in kernels]
    if not own:
        return places[0]
    return Place(doc.path, own[0].start, max(p.end for p in own), own[0].kind, own[0].key)


def _notes(view: BundleView, doc: StageDocument, layer_ids: list[int], places: list[Place]) -> list[tuple[Place, str]]:
    """The first place of each function holding only a part of the layers, with what it is."""
    if doc.stage == "model" or not places:
        return []
    notes = part_notes(view, doc.path, layer_ids)
    out: list[tuple[Place, str]] = []
    seen: set[str] = set()
    for p in places:
        unit = place_unit(view, p)
        if unit in notes and unit not in seen:
            seen.add(unit)
            out.append((p, notes[unit]))
    return out


def _tight(view: BundleView, path: str, places: list[Place]) -> list[Place]:
    """The places as highlighted: each its own span, but a whole function (a CUDA host
    launcher, a PrimFunc none of whose statements is indexed) only down to the end of the
    line naming it."""
    if not any(p.kind in FUNCTION_KINDS for p in places):
        return places
    text = view.bundle.text(path)  # once per document (the text cache may not hold them all)
    out = []
    for place in places:
        if place.kind in FUNCTION_KINDS:
            name = place.key.partition(":")[2] or place.key
            at = text.find(name, place.start, place.end) if name else -1
            end = text.find("\n", max(at, place.start), place.end)
            place = replace(place, end=end) if end > place.start else place
        out.append(place)
    return out


def _outermost(places: list[Place]) -> list[Place]:
    """Places in document order, each span once, those inside an earlier one dropped."""
    out: list[Place] = []
    for place in sorted(places, key=lambda p: (p.start, -p.end)):
        if out and place.end <= out[-1].end:
            continue
        out.append(place)
    return out

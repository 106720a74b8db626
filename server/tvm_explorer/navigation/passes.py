"""Pass-by-pass stepping (``tvmExplorer/previousPass`` / ``nextPass``): the same computation
in the nearest earlier or later pass document where its text differs, skipping the passes
that left it unchanged."""

from __future__ import annotations

import re

from tvm_explorer.bundle.index import DocumentIndex, Range
from tvm_explorer.bundle.types import Document
from tvm_explorer.navigation.chain import previous_step
from tvm_explorer.navigation.view import BundleView, Keep, Place, keep_all

_SPACE = re.compile(r"\s+")


def normalized(view: BundleView, path: str, start: int, end: int) -> str:
    """A range's text with runs of whitespace collapsed (re-indenting is no change)."""
    return _SPACE.sub(" ", view.bundle.text(path)[start:end]).strip()


def _text_of(view: BundleView, places: list[Place]) -> str:
    return "\n".join(normalized(view, p.path, p.start, p.end) for p in places)


def _is_pass_document(view: BundleView, path: str) -> bool:
    doc = view.bundle.document(path)
    return doc is not None and doc.stage != "model"


def previous_pass(view: BundleView, path: str, offset: int, keep: Keep = keep_all) -> list[Place]:
    """The computation at ``offset`` in the nearest earlier pass document whose text of it
    differs from this one's, or [] at the first pass document."""
    ranges = view.enclosing(path, offset, keep)
    if not ranges or not _is_pass_document(view, path):
        return []
    here = _text_of(view, [Place.of(path, ranges[0])])
    for _ in range(len(view.bundle.documents)):
        found = previous_step(view, path, offset, keep)
        if not found or not all(_is_pass_document(view, p.path) for p in found):
            return []
        if _text_of(view, found) != here:
            return found
        path, offset, keep = found[0].path, found[0].start, keep_all
    return []


def _next_documents(view: BundleView, path: str) -> list[Document]:
    doc = view.bundle.document(path)
    if doc is None or doc.stage == "code":
        return []
    later = view.bundle.documents[doc.order + 1 :]
    if not later:
        return []
    if later[0].stage == "code":
        return [d for d in later if d.stage == "code"]
    return [later[0]]


def next_step(view: BundleView, path: str, offset: int, keep: Keep = keep_all) -> list[Place]:
    """The computation at ``offset`` one document later (the reverse of ``previous_step``):
    the same key, the PrimFunc a binding calls, the same origin set, ranges holding all of its
    layers (a fused binding), else the nearest enclosing range with a key there."""
    ranges = view.enclosing(path, offset, keep)
    if not ranges:
        return []
    layers = view.layer_map.layers_of_set
    inner = ranges[0]
    mine = layers[inner.origin_set]
    for nxt in _next_documents(view, path):
        there = view.bundle.index(nxt.path)
        found = _forward(view, there, ranges, mine, layers, nxt.stage)
        if found:
            return [Place.of(nxt.path, r) for r in found]
    return []


def _forward(view: BundleView, there: DocumentIndex, ranges: list[Range], mine, layers, stage: str) -> list[Range]:
    inner = ranges[0]

    def shares(r: Range) -> bool:
        return not mine or not layers[r.origin_set] or bool(mine & layers[r.origin_set])

    if found := [r for r in there.by_key(inner.key) if shares(r)]:
        return found
    if inner.link and inner.link.startswith("prim:"):
        if found := there.by_link(inner.link) or there.by_key(inner.link):
            return found
    if inner.origin_set:
        same = there.by_origin_set(inner.origin_set)
        if found := [r for r in same if r.kind == inner.kind] or []:
            return _innermost(found)
        if mine:
            wider = [r for r in there.ranges if r.kind == inner.kind and mine <= layers[r.origin_set]]
            if wider:
                return _innermost(wider)
    for rng in ranges[1:]:
        if found := [r for r in there.by_key(rng.key) if shares(r)]:
            return found
    return []


def _innermost(ranges: list[Range]) -> list[Range]:
    ranges = sorted(set(ranges), key=lambda r: (r.start, -r.end))
    return [r for i, r in enumerate(ranges) if not (i + 1 < len(ranges) and ranges[i + 1].start < r.end)]


def next_pass(view: BundleView, path: str, offset: int, keep: Keep = keep_all) -> list[Place]:
    """The computation at ``offset`` in the nearest later pass document whose text of it
    differs from this one's, or [] at the generated code."""
    ranges = view.enclosing(path, offset, keep)
    if not ranges:
        return []
    here = _text_of(view, [Place.of(path, ranges[0])])
    for _ in range(len(view.bundle.documents)):
        found = next_step(view, path, offset, keep)
        if not found:
            return []
        if _text_of(view, found) != here:
            return found
        path, offset, keep = found[0].path, found[0].start, keep_all
    return []

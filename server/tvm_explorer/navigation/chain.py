"""One document back: the same computation in the previous document of the provenance chain
(the step behind ``tvmExplorer/previousPass``; declaration jumps whole IR levels, stages.py).

The rules, tried in order (see docs/navigation.md):

0. Relax of the import -> model: the origin layer(s).
0b. Machine code (SASS) -> the document it was compiled from: an instruction whose key is
   ``src:N`` goes to line N of that document (its line information).
1. TIR -> Relax: a position inside PrimFunc ``X`` goes to the Relax binding(s) of the
   previous document carrying link ``prim:X`` (the binding that calls the PrimFunc).
2. A binding calling PrimFunc ``X`` (link ``prim:X``): the bindings of the previous
   document calling ``X`` (the one with the same key, else the same origins, else all).
3. Same key: the innermost enclosing range whose key exists in the previous document
   (``store:<id>``, ``loop:``, ``prim:``, ``bind:<fn>:<var>``, ``func:`` ...), if it is
   the innermost range itself. A candidate sharing no origin layer is not the same
   computation (binding names are recycled by some passes) and is ignored.
4. Inside PrimFunc ``X`` of a Relax document: the bindings of this document calling ``X``,
   found by key in the previous document.
5. Same origin set: ranges of the previous document with the origin set of the innermost
   range that has one (inside the anchor found in 3 when there is one).
2b. (before 3) A binding calling a function ``F`` of this document that the previous one does
   not have (FuseOps made it): the bindings of the previous document that ``F``'s own
   bindings came from, in their order there (the conv, then its bias add, ...).
6. Part of the origins: ranges of the previous document whose layers are a subset of those
   origins, same kind preferred (a fused binding goes back to the bindings it fused).
7. The anchor of 3 (a coarser enclosing range: loop, PrimFunc, function).
8. The origin layer(s) in the model document.
"""

from __future__ import annotations

from bisect import bisect_right

from tvm_explorer.bundle.index import DocumentIndex, Range
from tvm_explorer.navigation.view import BundleView, Keep, Place, keep_all
from tvm_explorer.sass.document import source_line


def previous_step(view: BundleView, path: str, offset: int, keep: Keep = keep_all) -> list[Place]:
    """Places of the computation at ``offset`` one document back (empty for the model)."""
    doc = view.bundle.document(path)
    prev = view.bundle.previous_document(path)
    if doc is None or prev is None:
        return []
    ranges = view.enclosing(path, offset, keep)
    if not ranges:
        return []
    if prev.stage == "model":
        return view.layer_places(o.layer.id for o in view.origins_of(ranges))
    here = view.bundle.index(path)
    there = view.bundle.index(prev.path)
    prim = next((r for r in ranges if r.kind == "primfunc"), None)

    def places(found: list[Range]) -> list[Place]:
        return [Place.of(prev.path, r) for r in found]

    if prim is not None and doc.stage == "tir" and prev.stage == "relax":
        if found := _narrow(there.by_link(prim.key), prim):
            return places(found)
    inner = ranges[0]
    line = source_line(inner.key)
    if line is not None and doc.source == prev.path:
        if found_line := _source_line(view, prev.path, line):
            return [found_line]
    if inner.link and inner.link.startswith("prim:"):
        if found := _narrow(there.by_link(inner.link), inner):
            return places(found)
    if inner.kind == "binding" and doc.stage == "relax" and prev.stage == "relax":
        if found := _fused_constituents(view, path, here, there, inner):
            return places(found)
    layers = view.layer_map.layers_of_set

    def same_key(rng: Range) -> list[Range]:
        # Equal keys name the same computation, except binding names that a pass recycled
        # (FuseOps reuses "lv1" for another value): those have no origin in common.
        mine = layers[rng.origin_set]
        return [r for r in there.by_key(rng.key) if not mine or not layers[r.origin_set] or mine & layers[r.origin_set]]

    keyed = view.key_layers(prev.path)

    def has_same_key(rng: Range) -> bool:
        # same_key(rng) is not empty, in constant time per range (a crafted bundle nests
        # thousands of ranges whose key the previous document holds thousands of times).
        got = keyed.get(rng.key)
        if got is None:
            return False
        mine = layers[rng.origin_set]
        any_empty, union = got
        return not mine or any_empty or not mine.isdisjoint(union)

    anchor = next((r for r in ranges if has_same_key(r)), None)
    if anchor is inner:
        return places(_narrow(same_key(inner), inner))
    if prim is not None and doc.stage == "relax" and prev.stage == "relax":
        if callers := [r for b in here.by_link(prim.key) for r in same_key(b)]:
            return places(_unique(callers))
    within = same_key(anchor) if anchor is not None else None
    if found := _same_origins(view, there, prev.path, ranges, within):
        return places(found)
    if within:
        return places(within)
    return view.layer_places(o.layer.id for o in view.origins_of(ranges))


def _fused_constituents(
    view: BundleView, path: str, here: DocumentIndex, there: DocumentIndex, binding: Range
) -> list[Range]:
    """The bindings of the previous document that a call of a newly made function came from:
    each binding inside the callee maps back by the PrimFunc it calls (or its key)."""
    callee = _callee(view, path, binding)
    if callee is None:
        return []
    if there.by_key(f"func:{callee}") or there.by_key(f"prim:{callee}"):
        return []  # the function existed before: not made by this pass
    body = next(iter(here.by_key(f"func:{callee}")), None)
    if body is None:
        return []
    found: list[Range] = []
    for rng in here.ranges:
        if rng.kind != "binding" or not (body.start <= rng.start and rng.end <= body.end):
            continue
        candidates = there.by_link(rng.link) if rng.link else []
        found.extend(_narrow(candidates, rng) if candidates else [])
    return _unique(found)


def _callee(view: BundleView, path: str, binding: Range) -> str | None:
    """The function a binding calls by plain name (``lv = fused_conv2d_add_relu(...)``)."""
    from tvm_explorer.navigation.irsymbols import symbol_table

    table = symbol_table(view, path)
    if table is None:
        return None
    for occ in table.between(binding.start, binding.end):
        if occ.role == "read" and table.definition(occ).kind == "function":
            return occ.name
    return None


def _same_origins(
    view: BundleView,
    there: DocumentIndex,
    there_path: str,
    ranges: list[Range],
    within: list[Range] | None,
) -> list[Range]:
    source = next((r for r in ranges if r.origin_set), None)
    if source is None:
        return []

    inside = _inside_any(within)

    found = [r for r in there.by_origin_set(source.origin_set) if inside(r)]
    if found:
        same_kind = [r for r in found if r.kind == ranges[0].kind]
        return _innermost(same_kind or found)
    lmap = view.layer_map
    layers = lmap.layers_of_set[source.origin_set]
    part = [
        r
        for lid in layers
        for r in lmap.ranges(lid, there_path)
        if lmap.layers_of_set[r.origin_set] <= layers and inside(r)
    ]
    same_kind = [r for r in part if r.kind == source.kind]
    return _outermost(_unique(same_kind or part))


def _inside_any(within: list[Range] | None):
    """``inside(rng)``: whether ``rng`` lies in one of ``within`` (all when None); a binary
    search over the starts with the furthest end reached so far, not a scan per range."""
    if within is None:
        return lambda rng: True
    spans = sorted((w.start, w.end) for w in within)
    starts = [a for a, _ in spans]
    reach, far = [], -1
    for _, end in spans:
        far = max(far, end)
        reach.append(far)

    def inside(rng: Range) -> bool:
        i = bisect_right(starts, rng.start) - 1
        return i >= 0 and reach[i] >= rng.end

    return inside


def _narrow(candidates: list[Range], like: Range) -> list[Range]:
    """Of several candidates, those with ``like``'s key, else its origin set, else all."""
    for same in (lambda r: r.key == like.key, lambda r: r.origin_set == like.origin_set):
        if narrowed := [r for r in candidates if same(r)]:
            return narrowed
    return candidates


def _unique(ranges: list[Range]) -> list[Range]:
    return sorted(set(ranges), key=lambda r: (r.start, -r.end))


def _innermost(ranges: list[Range]) -> list[Range]:
    """Drop every range that contains another one of the list."""
    ranges = _unique(ranges)
    return [r for i, r in enumerate(ranges) if not (i + 1 < len(ranges) and ranges[i + 1].start < r.end)]


def _outermost(ranges: list[Range]) -> list[Range]:
    """Drop every range contained in another one of the list."""
    out: list[Range] = []
    for r in ranges:
        if not out or r.start >= out[-1].end:
            out.append(r)
    return out


def _source_line(view: BundleView, path: str, line: int) -> Place | None:
    """Line ``line`` (1-based) of document ``path`` as a place, its indentation left out: where
    machine code whose line information names that line comes from."""
    text = view.bundle.text(path)
    start = view.bundle.offset_of(path, line - 1, 0)
    end = text.find("\n", start)
    end = len(text) if end < 0 else end
    if start >= len(text) or end <= start:
        return None
    first = start + len(text[start:end]) - len(text[start:end].lstrip())
    return Place(path, first, end, "stmt", f"src:{line}")

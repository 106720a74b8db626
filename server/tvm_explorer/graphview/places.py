"""A layer's places as the graph's layer panel shows them: its model entry, its Relax
binding(s), its PrimFunc(s) and its kernel(s) in the generated code — the reference map of
``navigation/places.py``, grouped by document and function, each with a short excerpt."""

from __future__ import annotations

from typing import TypedDict

from tvm_explorer.navigation.kernels import FUNCTION_KINDS
from tvm_explorer.navigation.places import place_groups, reference_map
from tvm_explorer.navigation.view import BundleView

EXCERPT_LINES = 8  # lines of an excerpt (a kernel's first statements for the layer)
EXCERPT_WIDTH = 160  # characters of an excerpt line
MAX_GROUPS = 12  # places per layer (a layer lowered to many kernels lists its first ones)


class PlaceEntry(TypedDict):
    """One place of a layer: a document, the function holding it, where, and an excerpt."""

    stage: str  # model | relax | tir | code
    path: str  # bundle-relative document path
    function: str
    line: int  # 0-based
    character: int
    end_line: int
    end_character: int
    count: int  # places of the layer in this function
    excerpt: list[tuple[int, str]]  # (0-based line, text)


def layer_place_entries(view: BundleView, layer_id: int, encoding: str = "utf-16") -> list[PlaceEntry]:
    """The layer's places in the model, the last Relax, the last TIR and the generated code,
    one per (document, function), in that order."""
    stage_of = {doc.path: doc.stage for doc in view.bundle.documents}
    out: list[PlaceEntry] = []
    for path, function, found in place_groups(view, reference_map(view, [layer_id]))[:MAX_GROUPS]:
        try:
            lines = view.line_index(path, encoding)
        except Exception:  # noqa: BLE001 - a damaged document: its places are left out, the rest shows
            continue
        first = found[0]
        line, character = lines.position(first.start)
        end_line, end_character = lines.position(first.end)
        stage = stage_of.get(path, "")
        if stage == "model":
            wanted = list(range(line, min(end_line + 1, line + EXCERPT_LINES)))
        else:
            wanted = sorted({lines.position(p.start)[0] for p in found})[:EXCERPT_LINES]
            if len(wanted) == 1:  # one statement (a binding): the lines it spans
                wanted = list(range(line, min(end_line + 1, line + EXCERPT_LINES)))
        if stage in ("tir", "code") and wanted:
            # The line defining the function comes first (LLVM's kernel is its
            # ``<name>_compute_`` function, far below the line naming the kernel).
            head = _function_head(view, path, first.start)
            if head is not None and lines.position(head)[0] < wanted[0]:
                wanted = [lines.position(head)[0], *wanted[: EXCERPT_LINES - 1]]
        excerpt = []
        for n in wanted:
            try:
                excerpt.append((n, lines.line_text(n)[:EXCERPT_WIDTH]))
            except IndexError:
                break
        out.append(
            PlaceEntry(
                stage=stage,
                path=path,
                function=function,
                line=line,
                character=character,
                end_line=end_line,
                end_character=end_character,
                count=len(found),
                excerpt=excerpt,
            )
        )
    return out


def _function_head(view: BundleView, path: str, offset: int) -> int | None:
    """Start of the innermost function, PrimFunc or kernel holding ``offset``, if any."""
    for rng in view.bundle.index(path).enclosing(offset):
        if rng.kind in FUNCTION_KINDS:
            return rng.start
    return None

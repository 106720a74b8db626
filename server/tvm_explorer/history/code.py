"""A layer's code in one document: its own lines (whole lines), and its pieces by key.

Of the ranges whose origins hold any of the layers, a range is taken **whole** when all of its
layers are among them (a binding, a loop, a PrimFunc of the layer alone) or when no other such
range lies inside it (a statement shared with another layer: a fused kernel's conv store that
absorbed the bias add); every other range holding them (the Relax ``main``, a fused kernel
that also computes other layers, a loop around several layers' stores) contributes its first
line only (its ``def``, with its decorator, or its loop header), as context. So a layer's code
in a fused kernel is the kernel's header and the layer's own loops and statements, not the
other layers'. Lines are read with ``Bundle.whole_lines``: only around the layer's ranges.
"""

from __future__ import annotations

from bisect import bisect_right
from dataclasses import dataclass, field
from functools import cached_property

from tvm_explorer.bundle.index import Range
from tvm_explorer.navigation.view import BundleView

FUNCTION_KINDS = ("function", "primfunc")


def normalized(text: str) -> str:
    """``text`` with runs of whitespace collapsed (re-indenting is no change)."""
    return " ".join(text.split())


@dataclass(frozen=True)
class Unit:
    """One indexed range holding the layer(s) in a document. Its text is cut from its piece
    of the layer's code when asked for (a summary compares a few kinds of units only)."""

    kind: str
    key: str
    function: str
    """The innermost function or PrimFunc holding it (its own name for a function)."""
    layers: frozenset[int]
    whole: bool
    """Its whole text is the layer's code (False: a container shown by its first line)."""
    link: str | None
    source: str = field(repr=False, compare=False)
    """The text of the piece holding it; it is ``source[start:end]``."""
    start: int = 0
    end: int = 0

    @cached_property
    def raw(self) -> str:
        """Its text: the whole range, or its first line (with a decorator, two) for a container."""
        return self.source[self.start : self.end]

    @cached_property
    def head(self) -> str:
        """Its first line, indentation left out (a loop's or a block's header)."""
        line_end = self.source.find("\n", self.start, self.end)
        return self.source[self.start : self.end if line_end < 0 else line_end].strip()

    @cached_property
    def text(self) -> str:
        """Its text, whitespace collapsed (made when first compared)."""
        return normalized(self.raw)

    @property
    def private(self) -> bool:
        """A Relax function declared ``private=True`` (FuseOps' fused functions)."""
        return self.kind == "function" and self.head.startswith("@") and "private=True" in self.head

    @property
    def name(self) -> str:
        """A function's or PrimFunc's name (the key without its kind)."""
        return self.key.partition(":")[2] or self.key


@dataclass(frozen=True)
class LayerCode:
    """The layer's code in one document: whole-line pieces ``(start, end, text)`` in order,
    and every range holding the layer as a ``Unit``."""

    path: str
    stage: str
    pieces: tuple[tuple[int, int, str], ...]
    ranges: tuple[Range, ...] = ()
    """Every range holding the layers, in document order."""
    whole: frozenset[Range] = frozenset()
    """Those taken whole (the others: their first line)."""
    layers_of: list[frozenset[int]] | None = field(default=None, repr=False, compare=False)

    @cached_property
    def units(self) -> tuple[Unit, ...]:
        """Every range holding the layers as a ``Unit`` (made when a summary asks)."""
        if not self.ranges or self.layers_of is None:
            return ()
        return tuple(_units(list(self.ranges), self.whole, list(self.pieces), self.layers_of))

    @property
    def empty(self) -> bool:
        """Nothing of the layer in this document."""
        return not self.pieces

    @property
    def text(self) -> str:
        """The pieces' text, one after the other."""
        return "\n".join(p[2] for p in self.pieces)

    @property
    def line_count(self) -> int:
        """How many lines the layer's code has here."""
        return sum(p[2].count("\n") + 1 for p in self.pieces)

    @cached_property
    def normalized_lines(self) -> tuple[str, ...]:
        """The pieces' lines without their indentation (what a change is counted on)."""
        return tuple(line.strip() for p in self.pieces for line in p[2].split("\n"))

    def same_as(self, other: LayerCode | None) -> bool:
        """Whether ``other`` holds the same code, whitespace aside."""
        if other is None:
            return False
        if len(self.pieces) == len(other.pieces) and all(a[2] == b[2] for a, b in zip(self.pieces, other.pieces)):
            return True  # the same text (the usual case): nothing to collapse
        return self.normalized_lines == other.normalized_lines

    def of_kind(self, *kinds: str) -> list[Unit]:
        """Its units of these kinds, in document order."""
        return [u for u in self.units if u.kind in kinds]


def empty_code(path: str, stage: str) -> LayerCode:
    """The code of layers a document holds nothing of."""
    return LayerCode(path, stage, ())


def layer_code(view: BundleView, path: str, group: frozenset[int], embedded_only: bool = False) -> LayerCode:
    """The code of the layers ``group`` in document ``path`` (``embedded_only``: only what lies
    in PrimFuncs, for comparing the TIR a Relax module prints with the first TIR document).
    In the model document, the layers' entries."""
    doc = view.bundle.document(path)
    stage = doc.stage if doc else ""
    lmap = view.layer_map
    found: set[Range] = set()
    for lid in group:
        found.update(lmap.ranges(lid, path))
    if stage == "model":
        found = {r for r in found if r.kind == "layer"}
    ranges = sorted(found, key=lambda r: (r.start, -r.end))
    if embedded_only:
        ranges = _inside_primfuncs(ranges)
    if not ranges:
        return empty_code(path, stage)
    layers_of = lmap.layers_of_set
    whole: list[Range] = []
    headers: list[Range] = []
    reach = -1  # the end of the last range taken whole: what starts before it is inside it
    for i, rng in enumerate(ranges):
        if rng.start < reach:
            continue
        innermost = i + 1 == len(ranges) or ranges[i + 1].start >= rng.end
        if innermost or layers_of[rng.origin_set] <= group:
            whole.append(rng)
            reach = rng.end
        else:
            headers.append(rng)
    if not whole:
        return empty_code(path, stage)  # only inside functions holding it: nothing of its own here
    bundle = view.bundle
    pieces = bundle.whole_lines(path, [(r.start, r.end) for r in whole] + [(r.start, r.start + 1) for r in headers])
    # A function's range starts at its decorator: its header is the decorator and the def line.
    decorated = [end + 1 for start, end, text in pieces if _header_decorator(text, start, headers)]
    if decorated:
        pieces = bundle.whole_lines(path, [(s, e) for s, e, _ in pieces] + [(at, at + 1) for at in decorated])
    return LayerCode(path, stage, tuple(pieces), tuple(ranges), frozenset(whole), layers_of)


def _header_decorator(text: str, start: int, headers: list[Range]) -> bool:
    """Whether a piece ends with a container's first line that is only its decorator."""
    last = text.rsplit("\n", 1)[-1]
    if not last.lstrip().startswith("@"):
        return False
    line_start = start + len(text) - len(last)
    return any(line_start <= h.start <= start + len(text) for h in headers)


def _inside_primfuncs(ranges: list[Range]) -> list[Range]:
    out, reach = [], -1
    for rng in ranges:
        if rng.kind == "primfunc" and rng.start >= reach:
            reach = rng.end
        if rng.start < reach:
            out.append(rng)
    return out


def _units(
    ranges: list[Range],
    whole_set: frozenset[Range],
    pieces: list[tuple[int, int, str]],
    layers_of: list[frozenset[int]],
) -> list[Unit]:
    starts = [p[0] for p in pieces]
    out: list[Unit] = []
    stack: list[tuple[int, str]] = []  # (end, name) of the functions holding the position
    reach = -1
    for rng in ranges:
        while stack and stack[-1][0] <= rng.start:
            stack.pop()
        in_whole = rng.start < reach
        if rng in whole_set:
            reach = max(reach, rng.end)
        is_whole = in_whole or rng in whole_set
        name = rng.key.partition(":")[2] if rng.kind in FUNCTION_KINDS else ""
        if rng.kind in FUNCTION_KINDS:
            stack.append((rng.end, name))
        i = bisect_right(starts, rng.start) - 1
        p_start, _, source = pieces[max(i, 0)]
        start = max(0, rng.start - p_start)
        end = min(len(source), rng.end - p_start)
        if not is_whole:  # its first line; a decorator's and the def line
            cut = source.find("\n", start, end)
            if cut >= 0 and source[start:cut].lstrip().startswith("@"):
                cut = source.find("\n", cut + 1, end)
            end = end if cut < 0 else cut
        out.append(
            Unit(
                rng.kind,
                rng.key,
                name or (stack[-1][1] if stack else ""),
                layers_of[rng.origin_set],
                is_whole,
                rng.link,
                source,
                start,
                end,
            )
        )
    return out

"""The functions of two IR documents of a bundle aligned by name, for a pass diff
(``tvmExplorer/passDiffAlignment``): which functions a pass changed, added, removed or left as
they were, with each one's span on either side — the provenance index's function and PrimFunc
ranges (from the decorator to the last character of the body), never a re-parse of the text."""

from __future__ import annotations

from dataclasses import dataclass

from tvm_explorer.bundle.index import Range
from tvm_explorer.navigation.view import BundleView

IR_STAGES = ("relax", "tir")
FUNCTION_KINDS = ("function", "primfunc")


class NotAligned(Exception):
    """Two documents a pass diff cannot align (the message says why, naming them)."""


@dataclass(frozen=True)
class AlignedFunction:
    """A function of either document: ``change`` is ``changed``, ``added``, ``removed`` or
    ``unchanged`` (the same text on both sides); ``before``/``after``: its ``(start, end)``
    character offsets in each document (None on the side that lacks it)."""

    name: str
    change: str
    before: tuple[int, int] | None
    after: tuple[int, int] | None


@dataclass(frozen=True)
class Alignment:
    """The functions of ``before`` → ``after`` in the after-document's order, those only before
    (removed) last — a removed function left among the others would stand beside a new one,
    and a line diff would pair their look-alike loops; ``headers``: where each document's
    first function starts (its module header is the text before; the whole text when it has
    no function)."""

    before: str
    after: str
    functions: list[AlignedFunction]
    headers: tuple[int, int]

    @property
    def unchanged(self) -> int:
        """How many functions the pass left as they were."""
        return sum(f.change == "unchanged" for f in self.functions)


def functions_of(view: BundleView, path: str) -> list[tuple[str, Range]]:
    """The top-level functions and PrimFuncs of an IR document in order, each named as in the
    document (a second function of the same name, which no module holds, as ``name#1``)."""
    seen: dict[str, int] = {}
    out = []
    for rng in view.bundle.index(path).outermost():
        if rng.kind not in FUNCTION_KINDS:
            continue
        name = rng.key.split(":", 1)[-1]
        n = seen.get(name, 0)
        seen[name] = n + 1
        out.append((f"{name}#{n}" if n else name, rng))
    return out


def ir_stage(view: BundleView, path: str) -> str | None:
    """The stage of a Relax or TIR document of the bundle (None: a model or code document)."""
    doc = view.bundle.document(path)
    if doc is None:
        raise NotAligned(f"{path} is not a document of the bundle {view.root}")
    return doc.stage if doc.stage in IR_STAGES else None


def align(view: BundleView, before: str, after: str) -> Alignment | None:
    """The functions of document ``before`` → ``after`` aligned by name, or None when they are
    not both Relax or both TIR (a model or generated-code document, or the Relax → TIR step:
    a diff of whole documents)."""
    stages = ir_stage(view, before), ir_stage(view, after)
    if stages[0] is None or stages[0] != stages[1]:
        return None
    a, b = functions_of(view, before), functions_of(view, after)
    text_a, text_b = view.bundle.text(before), view.bundle.text(after)
    in_a, in_b = dict(a), dict(b)
    out = []
    for name, y in b:
        x = in_a.get(name)
        if x is None:
            out.append(AlignedFunction(name, "added", None, (y.start, y.end)))
            continue
        same = text_a[x.start : x.end] == text_b[y.start : y.end]
        out.append(AlignedFunction(name, "unchanged" if same else "changed", (x.start, x.end), (y.start, y.end)))
    out += [AlignedFunction(name, "removed", (x.start, x.end), None) for name, x in a if name not in in_b]
    headers = (a[0][1].start if a else len(text_a), b[0][1].start if b else len(text_b))
    return Alignment(before, after, out, headers)

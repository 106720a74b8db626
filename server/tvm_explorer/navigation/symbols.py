"""Outline of a bundle document: functions, PrimFuncs, bindings, blocks, layers."""

from __future__ import annotations

from dataclasses import dataclass, field

from ..bundle.index import Range
from .background import REQUESTS
from .view import BundleView

OUTLINE_KINDS = ("layer", "function", "primfunc", "binding", "block")
MAX_OUTLINE_DEPTH = 32
"""Deepest nesting of an outline: entries nested deeper become children of their ancestor at
this depth, in document order. Real outlines are a few levels deep; a crafted index nesting
thousands of ranges made the reply deeper than serializers (and editors) can follow."""


@dataclass
class Symbol:
    """One outline entry; ``kind`` is an index kind (see docs/bundle-format.md)."""

    name: str
    detail: str
    kind: str
    start: int
    end: int
    children: list[Symbol] = field(default_factory=list)


def _name(view: BundleView, rng: Range) -> tuple[str, str]:
    if rng.kind == "layer":
        layer = view.layer_of_key(rng.key)
        if layer is not None:
            return f"{layer.op_index}: {layer.opcode}", ", ".join(layer.outputs)
    tail = rng.key.rsplit(":", 1)[-1]
    detail = rng.link[len("prim:") :] if rng.link and rng.link.startswith("prim:") else ""
    return tail or rng.key, detail


def document_symbols(view: BundleView, path: str) -> list[Symbol]:
    """The outline of a document, nested like its ranges (at most ``MAX_OUTLINE_DEPTH``
    levels)."""
    roots: list[Symbol] = []
    stack: list[Symbol] = []
    for n, rng in enumerate(view.bundle.index(path).ranges):
        if not n & 0x3FF:
            REQUESTS.checkpoint()  # on a warm-up: requests go first (see ``background``)
        if rng.kind not in OUTLINE_KINDS:
            continue
        name, detail = _name(view, rng)
        sym = Symbol(name, detail, rng.kind, rng.start, rng.end)
        while stack and stack[-1].end <= rng.start:
            stack.pop()
        parent = stack[min(len(stack), MAX_OUTLINE_DEPTH - 1) - 1] if stack else None
        (parent.children if parent else roots).append(sym)
        stack.append(sym)
    return roots

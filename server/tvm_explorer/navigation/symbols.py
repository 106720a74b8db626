"""Outline of a bundle document: functions, PrimFuncs, bindings, blocks, layers."""

from __future__ import annotations

from dataclasses import dataclass, field

from ..bundle.index import Range
from .view import BundleView

OUTLINE_KINDS = ("layer", "function", "primfunc", "binding", "block")


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
    """The outline of a document, nested like its ranges."""
    roots: list[Symbol] = []
    stack: list[Symbol] = []
    for rng in view.bundle.index(path).ranges:
        if rng.kind not in OUTLINE_KINDS:
            continue
        name, detail = _name(view, rng)
        sym = Symbol(name, detail, rng.kind, rng.start, rng.end)
        while stack and stack[-1].end <= rng.start:
            stack.pop()
        (stack[-1].children if stack else roots).append(sym)
        stack.append(sym)
    return roots

"""Outline of a bundle document: functions, PrimFuncs, bindings, blocks, layers."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from tvm_explorer.bundle.index import Range
from tvm_explorer.bundle.types import Layer
from tvm_explorer.navigation.background import REQUESTS
from tvm_explorer.navigation.view import BundleView

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


def layer_label(layer: Layer) -> str:
    """A layer as the outline and symbol search name it: its TF layer name, ONNX node name or
    PyTorch module path (``small_cnn_1/conv2d_1_2``, ``block1.conv1``), else its opcode."""
    if layer.module_class and "/" in layer.name:
        return layer.name.split("/")[0]  # the module path (the node's own name after it)
    return layer.display_name or layer.opcode


def _name(view: BundleView, rng: Range) -> tuple[str, str]:
    if rng.kind == "layer":
        layer = view.layer_of_key(rng.key)
        if layer is not None:
            label = layer_label(layer)
            head = f"{layer.op_index}: {layer.opcode}"
            return (f"{head} {label}" if label != layer.opcode else head), ", ".join(layer.outputs)
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


@dataclass(frozen=True)
class LayerSymbol:
    """A layer as workspace symbol search finds it."""

    name: str  # "small_cnn_1/conv2d_1_2 · op 2 CONV_2D"; an exact match first: "conv2d_1_2 · op 2 CONV_2D"
    detail: str  # module class and node name, when the model has them; the whole name when cut
    layer: Layer
    start: int  # its entry in the model document
    end: int
    rank: int = 2
    """0: the query is the layer's name, a part of it between ``/`` or ``.``, or its ``op N``;
    1: it contains the query as typed; 2: it has the query's characters in order."""


def _matches(query: str, text: str) -> bool:
    """The query's characters in order in ``text``, ignoring case (as editors filter symbols)."""
    it = iter(text.lower())
    return all(ch in it for ch in query.lower() if not ch.isspace())


_NAME_PARTS = re.compile(r"[/.]")


def _exact_part(query: str, layer: Layer, label: str) -> str | None:
    """The name the query is exactly (ignoring case): the label, the whole name, one of its
    parts between ``/`` or ``.`` (a TF layer ``conv2d_35`` of ``model/conv2d_35``, a module
    ``down_proj``, an FX node ``mm_16``); "" for its ``op N``; None if none."""
    q = query.strip().lower()
    if not q:
        return None
    for whole in (label, layer.name):
        if whole and whole.lower() == q:
            return whole
    if q == f"op {layer.op_index}":
        return ""
    for part in _NAME_PARTS.split(layer.name):
        if part and part.lower() == q:
            return part
    return None


def layer_symbols(view: BundleView, query: str, limit: int = 1000) -> list[LayerSymbol]:
    """The layers matching ``query`` by TF layer name, ONNX node name, PyTorch module path,
    opcode or op number (``op 2``), each at its model-document entry: exact matches first
    (named by the part the query matched, so that an editor's own fuzzy ranking, which
    favours a name starting with the query, keeps them first too), then those containing the
    query as typed, then the looser matches, each in layer order (``rank``)."""
    out = []
    q = query.strip().lower()
    for layer in view.bundle.layers:
        places = view.layer_map.model_places.get(layer.id)
        if not places:
            continue
        label = layer_label(layer)
        name = (
            f"{label} · op {layer.op_index} {layer.opcode}"
            if label != layer.opcode
            else f"op {layer.op_index} {layer.opcode}"
        )
        detail = " ".join(
            x
            for x in (
                f"({layer.module_class})" if layer.module_class else "",
                layer.name if layer.name != label else "",
            )
            if x
        )
        if query and not (_matches(query, name) or _matches(query, layer.name)):
            continue
        exact = _exact_part(query, layer, label)
        rank = 2
        if exact is not None:
            rank = 0
            if exact and not name.lower().startswith(exact.lower()):
                detail = " ".join(x for x in (label, detail) if x)  # the whole name, said apart
                name = f"{exact} · op {layer.op_index} {layer.opcode}"
        elif q in name.lower() or q in layer.name.lower():
            rank = 1
        out.append(LayerSymbol(name, detail, layer, places[0].start, places[0].end, rank))
    out.sort(key=lambda sym: sym.rank)
    return out[:limit]

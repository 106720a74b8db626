"""The model's structure as a graph: which tensor joins which layers, the graph inputs and
outputs, and the scopes layers are grouped by — all read from the bundle's model document
(``model.tflgraph`` / ``model.onnxgraph`` / ``model.fxgraph``) and ``index.json``."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from tvm_explorer.bundle.reader import Layer
from tvm_explorer.navigation.layer_facts import LayerFacts, layer_facts
from tvm_explorer.navigation.view import BundleView
from tvm_explorer.tablenames import shown_name

# Headings of the model documents (frontends/tflite/document.py, frontends/graph_document.py).
_SUBGRAPH = re.compile(r'^(?:subgraph (\d+)|graph) "(.*)"$')
_IO = re.compile(r"^  (input|output) +(\S+) +(\w+\[[^\]]*\])")
_MODULE = re.compile(r"^module (.+?)(?: \(([^()]*)\))?$")


@dataclass
class GraphIO:
    """A graph input or output tensor."""

    kind: str  # "input" | "output"
    subgraph: int
    name: str
    type: str


@dataclass
class Structure:
    """What the model document says beyond each layer's own entry."""

    io: list[GraphIO] = field(default_factory=list)
    subgraph_names: dict[int, str] = field(default_factory=dict)
    modules: dict[int, tuple[str, str]] = field(default_factory=dict)  # layer id -> (path, class)


def read_structure(view: BundleView) -> Structure:
    """Graph inputs/outputs per subgraph and (ONNX, PyTorch) each layer's module heading."""
    out = Structure()
    try:
        text = view.bundle.text(view.model_path)
    except Exception:  # noqa: BLE001 - a damaged model document: the graph goes without inputs/outputs and modules
        return out
    entry_of = {}
    for lid, places in view.layer_map.model_places.items():
        if places:
            entry_of[places[0].start] = lid
    subgraph, sub_count, module = 0, 0, ("", "")
    offset = 0
    for line in text.split("\n"):
        start, offset = offset, offset + len(line) + 1
        if (m := _SUBGRAPH.match(line)) is not None:
            subgraph = int(m.group(1)) if m.group(1) is not None else sub_count
            sub_count += 1
            out.subgraph_names[subgraph] = m.group(2)
        elif (m := _IO.match(line)) is not None:
            out.io.append(GraphIO(m.group(1), subgraph, m.group(2), m.group(3)))
        elif (m := _MODULE.match(line)) is not None:
            path = m.group(1)
            module = ("", "") if path == "(top level)" else (path, m.group(2) or "")
        elif (found := entry_of.get(start)) is not None:
            out.modules[found] = module
    return out


@dataclass(frozen=True)
class Edge:
    """A tensor from a producer (a layer id, or ``in:<subgraph>:<name>``) to a consumer."""

    source: str
    target: str
    tensor: str
    type: str


def io_id(kind: str, subgraph: int, name: str) -> str:
    """The node id of a graph input or output."""
    return f"{'in' if kind == 'input' else 'out'}:{subgraph}:{name}"


def edges(view: BundleView, structure: Structure) -> list[Edge]:
    """Every tensor that joins two nodes: producer layer (or graph input) → consumer layer
    (or graph output). Constants (weights) are not edges: they are the consumer's inputs."""
    producer: dict[tuple[int, str], str] = {}
    for io in structure.io:
        if io.kind == "input":
            producer[(io.subgraph, io.name)] = io_id("input", io.subgraph, io.name)
    facts: dict[int, LayerFacts] = {}
    for layer in view.bundle.layers:
        facts[layer.id] = layer_facts(view, layer.id)
        for t in facts[layer.id].outputs or [_output_of(layer, i) for i in range(len(layer.outputs))]:
            producer.setdefault((layer.subgraph, t.name), str(layer.id))
    out: list[Edge] = []
    seen: set[tuple[str, str, str]] = set()

    def add(source: str, target: str, tensor: str, type_text: str) -> None:
        if source != target and (source, target, tensor) not in seen:
            seen.add((source, target, tensor))
            out.append(Edge(source, target, tensor, type_text))

    for layer in view.bundle.layers:
        for t in facts[layer.id].inputs:
            src = producer.get((layer.subgraph, t.name))
            if src is not None and not t.const:
                add(src, str(layer.id), t.name, t.type_text)
    for io in structure.io:
        if io.kind == "output":
            src = producer.get((io.subgraph, io.name))
            if src is not None:
                add(src, io_id("output", io.subgraph, io.name), io.name, io.type)
    return out


def _output_of(layer: Layer, i: int):
    from tvm_explorer.navigation.layer_facts import TensorFacts

    t = layer.output_types[i] if i < len(layer.output_types) else {}
    shape = tuple(str(d) for d in (t.get("shape") or ()))
    return TensorFacts(layer.outputs[i], str(t.get("dtype", "")), shape, False, "")


def scope_path(layer: Layer, structure: Structure) -> tuple[list[str], str]:
    """The scopes a layer sits in, outermost first, and how their path is written: the module
    path of its model document heading (ONNX, PyTorch: ``backbone.layer1.conv`` → backbone,
    layer1, conv), else the scopes of a ``/backbone/layer1/Conv`` node name (ONNX exporters),
    else the Keras / TF name scope of its name (TFLite: ``model/block1/conv/Relu6`` → model,
    block1, conv; a fused name ``a/b;a/c`` by its first part). At most MAX_SCOPE_DEPTH
    scopes, the outermost: deeper nesting draws no deeper boxes."""
    module = structure.modules.get(layer.id, ("", ""))[0]
    if module:
        return [p for p in module.split(".", MAX_SCOPE_DEPTH)[:MAX_SCOPE_DEPTH] if p], "."
    return [p for p in layer.name.split(";", 1)[0].split("/", MAX_SCOPE_DEPTH)[:-1] if p], "/"


MAX_SCOPE_DEPTH = 64
"""Scopes of a layer's path that group it (real models nest a dozen deep; a hostile name half a
million)."""


MIN_GROUP = 3
"""Layers a scope must hold to be drawn as a group: a scope of two is most often one layer and
its helper (a weight's DEQUANTIZE), and a box around each such pair made ELK's layout of a
MediaPipe model four times as wide."""


@dataclass
class Group:
    """A collapsible group of nodes: one scope."""

    id: str
    label: str
    path: str
    parent: str | None
    size: int = 0  # layers inside, at any depth


MAX_GROUP_PATH = 1024
"""Characters of a group's scope path the graph document carries (its tooltip): a hostile name
may nest scopes half a million deep."""


def groups(view: BundleView, structure: Structure) -> tuple[list[Group], dict[int, str | None]]:
    """The scope groups worth drawing and each layer's innermost group. A scope holding fewer than
    ``MIN_GROUP`` layers is no group (its nodes stand for it); a scope holding exactly what its parent
    holds is folded into the parent; several subgraphs are top-level groups of their own.

    Scopes are numbered as a tree (a scope is its parent's number and its own name), so that
    time and memory grow with the names' total length, not with the square of their depth (a
    46 KiB name of nested scopes took 3.4 GB as a tuple per prefix)."""
    layers = view.bundle.layers
    several = len({layer.subgraph for layer in layers}) > 1
    paths: dict[int, list[str]] = {}
    nodes: dict[int, list[int]] = {}  # layer id -> the scope numbers of its path, outermost first
    separator: dict[int, str] = {}
    number: dict[tuple[int, str], int] = {}  # (parent's number, name) -> number; the root is 0
    count: list[int] = [0]
    for layer in layers:
        scopes, separator[layer.id] = scope_path(layer, structure)
        path = ([f"#{layer.subgraph}"] if several else []) + scopes
        paths[layer.id] = path
        at, chain = 0, []
        for name in path:
            nxt = number.get((at, name))
            if nxt is None:
                nxt = number[(at, name)] = len(count)
                count.append(0)
            count[nxt] += 1
            chain.append(nxt)
            at = nxt
        nodes[layer.id] = chain
    made: dict[int, Group] = {}
    of_layer: dict[int, str | None] = {}
    for layer in layers:
        path = paths[layer.id]
        parent: Group | None = None
        for depth, key in enumerate(nodes[layer.id], start=1):
            n = count[key]
            subgraph_group = several and depth == 1
            if not subgraph_group and (n < MIN_GROUP or (parent is not None and n == parent.size)):
                continue
            if key not in made:
                label = path[depth - 1]
                if subgraph_group:
                    label = f"subgraph {layer.subgraph} {structure.subgraph_names.get(layer.subgraph, '')}".strip()
                made[key] = Group(
                    f"g{len(made)}",
                    shown_name(label),
                    _joined(path, depth, separator[layer.id]),
                    parent.id if parent else None,
                    n,
                )
            parent = made[key]
        of_layer[layer.id] = parent.id if parent else None
    return list(made.values()), of_layer


def _joined(path: list[str], depth: int, sep: str) -> str:
    """The first ``depth`` scopes of ``path`` written as a path, at most MAX_GROUP_PATH
    characters of it (the rest cut in the middle)."""
    parts, size = [], 0
    for i in range(depth):
        parts.append(path[i])
        size += len(path[i]) + len(sep)
        if size > 2 * MAX_GROUP_PATH:  # enough for its head: the tail comes from the end
            tail, tail_size = [], 0
            for j in range(depth - 1, i, -1):
                tail.append(path[j])
                tail_size += len(path[j]) + len(sep)
                if tail_size > MAX_GROUP_PATH:
                    break
            parts.extend(reversed(tail))
            break
    return shown_name(sep.join(parts), MAX_GROUP_PATH)

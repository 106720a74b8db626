"""The model's structure as a graph: which tensor joins which layers, the graph inputs and
outputs, and the scopes layers are grouped by — all read from the bundle's ``structure.json``
(written at capture from the model itself) and ``index.json``."""

from __future__ import annotations

import re
from dataclasses import dataclass

from tvm_explorer.bundle.sections.structure import LayerFacts, ModelStructure, TensorFacts
from tvm_explorer.bundle.types import Layer
from tvm_explorer.graphview import types
from tvm_explorer.graphview.types import Repeat
from tvm_explorer.navigation.layer_facts import layer_facts
from tvm_explorer.navigation.view import BundleView
from tvm_explorer.provenance.repeats import compress
from tvm_explorer.tablenames import shown_name

Structure = ModelStructure


def read_structure(view: BundleView) -> Structure:
    """Graph inputs/outputs per subgraph, their names and (ONNX, PyTorch) each layer's module;
    empty when the bundle's structure is missing or damaged."""
    return view.bundle.structure() or Structure()


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


def _output_of(layer: Layer, i: int) -> TensorFacts:
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
    """The scope groups worth drawing and each layer's innermost group (``scope_groups``)."""
    scoped = []
    for layer in view.bundle.layers:
        scopes, separator = scope_path(layer, structure)
        scoped.append(Scoped(layer.id, layer.subgraph, scopes, separator))
    return scope_groups(scoped, structure.subgraph_names)


@dataclass(frozen=True)
class Scoped:
    """A layer and the scopes it sits in, outermost first (``scope_path``)."""

    id: int
    subgraph: int
    scopes: list[str]
    separator: str


def scope_groups(layers: list[Scoped], subgraph_names: dict[int, str]) -> tuple[list[Group], dict[int, str | None]]:
    """The scope groups worth drawing and each layer's innermost group. A scope holding fewer than
    ``MIN_GROUP`` layers is no group (its nodes stand for it); a scope holding exactly what its parent
    holds is folded into the parent; several subgraphs are top-level groups of their own.

    Scopes are numbered as a tree (a scope is its parent's number and its own name), so that
    time and memory grow with the names' total length, not with the square of their depth (a
    46 KiB name of nested scopes took 3.4 GB as a tuple per prefix)."""
    several = len({layer.subgraph for layer in layers}) > 1
    paths: dict[int, list[str]] = {}
    nodes: dict[int, list[int]] = {}  # layer id -> the scope numbers of its path, outermost first
    number: dict[tuple[int, str], int] = {}  # (parent's number, name) -> number; the root is 0
    count: list[int] = [0]
    for layer in layers:
        path = ([f"#{layer.subgraph}"] if several else []) + layer.scopes
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
                    label = f"subgraph {layer.subgraph} {subgraph_names.get(layer.subgraph, '')}".strip()
                made[key] = Group(
                    f"g{len(made)}",
                    shown_name(label),
                    _joined(path, depth, layer.separator),
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


_INDEXED = re.compile(r"^(.*?)[._]?(\d+)$")
MIN_REPEAT = 4
"""Layers a repetition holds at least (a decoder layer holds dozens; a lone layer and its weights
three)."""


def repetitions(group_list: list[Group], of_layer: dict[int, str | None], opcodes: dict[int, str]) -> dict[str, Repeat]:
    """Repeated modules: sibling groups named alike but for an index (``layers.0`` … ``layers.31``,
    ``block_1``, ``block_2``), numbered consecutively, that hold the same operators in the same
    order and at least ``MIN_REPEAT`` of them (decoder layers, transformer blocks, identical
    residual stages). Group id -> ``{"pattern", "index", "count"}``:
    ``pattern`` the paths written as one (``m.layers.{0..31}``, provenance/repeats.py), ``index``
    the repetition's place among them (0-based), ``count`` how many there are."""
    parent_of = {g.id: g.parent for g in group_list}
    signature: dict[str, list[str]] = {g.id: [] for g in group_list}
    for lid in sorted(of_layer):
        at = of_layer[lid]
        while at is not None:
            signature[at].append(opcodes.get(lid, ""))
            at = parent_of[at]
    families: dict[tuple, list[tuple[int, Group]]] = {}
    for group in group_list:
        m = _INDEXED.match(group.label)
        if m is None:
            continue
        key = (group.parent, m.group(1), tuple(signature[group.id]))
        families.setdefault(key, []).append((int(m.group(2)), group))
    out: dict[str, Repeat] = {}
    for members in families.values():
        members.sort(key=lambda item: item[0])
        indices = [i for i, _ in members]
        # A module list numbers its repetitions 0, 1, 2…; Keras numbers every layer it makes
        # (conv2d_3, conv2d_7): lookalike one-layer scopes with gaps are not repetitions.
        if len(members) < 2 or indices != list(range(indices[0], indices[0] + len(indices))):
            continue
        if members[0][1].size < MIN_REPEAT:
            continue
        pattern = compress([g.path.replace("/", ".") for _, g in members])
        text = pattern[0] if len(pattern) == 1 else f"{members[0][1].path} … {members[-1][1].path}"
        for i, (_, g) in enumerate(members):
            out[g.id] = {"pattern": text, "index": i, "count": len(members)}
    return out


def folds(node_ids: list[str], edge_list: list[Edge], inputs: set[str], outputs: set[str]) -> dict[str, str]:
    """Nodes that only prepare constants, each with the node it is folded into when drawn: a node
    no graph input reaches (a weight's DEQUANTIZE or CAST, the RESHAPE or transpose of a weight,
    PyTorch's ``arange``/mask plumbing computed from shapes alone) goes into the first node that
    consumes what it makes (through other such nodes); a dead end (an assert: its result read by
    nothing and no graph output) goes into the first node it reads from, or, joined to nothing,
    into the next node in model order. Nothing is folded in a graph without inputs (a damaged
    model document)."""
    if not inputs:
        return {}
    succ: dict[str, list[str]] = {}
    pred: dict[str, list[str]] = {}
    for e in edge_list:
        succ.setdefault(e.source, []).append(e.target)
        pred.setdefault(e.target, []).append(e.source)
    reached: set[str] = set()
    stack = list(inputs)
    while stack:
        for t in succ.get(stack.pop(), ()):
            if t not in reached:
                reached.add(t)
                stack.append(t)
    known = set(node_ids)
    order = {nid: i for i, nid in enumerate(node_ids)}
    constant = {n for n in node_ids if n not in reached}
    out: dict[str, str] = {}
    for n in node_ids:
        if n not in constant:
            continue
        # the first consumer that is drawn: breadth first through constant-only nodes
        seen, frontier, host = {n}, [n], None
        while frontier and host is None:
            nxt = []
            for x in frontier:
                for t in sorted(succ.get(x, ()), key=lambda y: order.get(y, len(order))):
                    if t in seen or t not in known:
                        continue
                    if t not in constant:
                        host = t if host is None else host
                        break
                    seen.add(t)
                    nxt.append(t)
            frontier = nxt
        if host is not None:
            out[n] = host
    for n in node_ids:
        if n in out or any(t in known for t in succ.get(n, ())) or n in outputs:
            continue
        sources = sorted((s for s in pred.get(n, ()) if s in known), key=lambda y: order[y])
        if sources:
            out[n] = out.get(sources[0], sources[0])
        elif not pred.get(n):
            # joined to nothing (an assert on a weight): with the next drawn node, in model order
            later = (m for m in node_ids[order[n] + 1 :] if m not in out and (succ.get(m) or pred.get(m)))
            host = next(later, None)
            if host is not None:
                out[n] = host
    return out


def document_edges(edge_list: list[Edge]) -> list[types.Edge]:
    """The edges as the graph document carries them."""
    return [{"source": e.source, "target": e.target, "tensor": e.tensor, "type": e.type} for e in edge_list]


def document_groups(group_list: list[Group], repeats: dict[str, Repeat]) -> list[types.Group]:
    """The groups as the graph document carries them, each with its family of repeats."""
    return [
        {"id": g.id, "label": g.label, "path": g.path, "parent": g.parent, "size": g.size, "repeat": repeats.get(g.id)}
        for g in group_list
    ]

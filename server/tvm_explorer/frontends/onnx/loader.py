"""Read an ONNX model and describe its nodes (``GraphModel``), each failure a ``ModelError``.

Nodes are numbered in the order TVM's importer converts them: the main graph's nodes in
order, and for an ``If`` its then- and else-branch nodes (recursively) just before the ``If``
itself. Shapes and dtypes come from ONNX shape inference where it succeeds.
"""

from __future__ import annotations

import ast
import hashlib
import os

from tvm_explorer.errors import ModelError
from tvm_explorer.frontends.graph import GraphModel, GraphNode, source_and_stack
from tvm_explorer.frontends.model import SubgraphInfo, TensorInfo
from tvm_explorer.frontends.model_file import read_model_bytes as read_bytes
from tvm_explorer.frontends.onnx.external_data import embed_external_data

DOCUMENT_PATH = "model.onnxgraph"

_ELEM_TYPES = {
    1: "float32",
    2: "uint8",
    3: "int8",
    4: "uint16",
    5: "int16",
    6: "int32",
    7: "int64",
    8: "string",
    9: "bool",
    10: "float16",
    11: "float64",
    12: "uint32",
    13: "uint64",
    14: "complex64",
    15: "complex128",
    16: "bfloat16",
}


def graph_key(graph) -> tuple:
    """Identifies a (sub)graph by its nodes' op types and outputs (SSA names are unique)."""
    return tuple((n.op_type, tuple(n.output)) for n in graph.node)


def load_onnx(path: str | os.PathLike, proto=None) -> GraphModel:
    """Read and describe an ONNX model (``proto``: an already loaded ``onnx.ModelProto``)."""
    import onnx

    path = os.fspath(path)
    if proto is None:
        data = read_bytes(path, "an ONNX model")
        try:
            proto = onnx.load_model_from_string(data)
        except Exception as err:  # noqa: BLE001 - protobuf's DecodeError and friends
            raise ModelError(
                f"{path}: not an ONNX model, or a truncated one "
                f"(protobuf could not parse it: {' '.join(str(err).split()) or type(err).__name__})"
            ) from None
        embed_external_data(proto, path)  # from the model's folder, never the current directory
    else:
        data = proto.SerializeToString()
    if not proto.HasField("graph") or proto.ir_version < 1 or not proto.opset_import:
        raise ModelError(f"{path}: not an ONNX model (no graph, IR version or opset; a truncated file?)")
    if not proto.graph.node:
        raise ModelError(f"{path}: ONNX graph has no nodes")
    try:
        inferred = onnx.shape_inference.infer_shapes(proto)
    except Exception:  # noqa: BLE001 - shapes are a help, not a requirement
        inferred = proto
    return _describe(path, data, proto, inferred)


def _types(graph, into: dict) -> None:
    for vi in list(graph.input) + list(graph.output) + list(graph.value_info):
        tt = vi.type.tensor_type
        if not vi.type.HasField("tensor_type"):
            continue
        shape = (
            tuple(d.dim_value if d.HasField("dim_value") else (d.dim_param or "?") for d in tt.shape.dim)
            if tt.HasField("shape")
            else ()
        )
        into[vi.name] = (shape, _ELEM_TYPES.get(tt.elem_type, f"type{tt.elem_type}"))
    for init in graph.initializer:
        into[init.name] = (tuple(init.dims), _ELEM_TYPES.get(init.data_type, f"type{init.data_type}"))
    for node in graph.node:
        for attr in node.attribute:
            if attr.HasField("g"):
                _types(attr.g, into)


def _describe(path: str, data: bytes, proto, inferred) -> GraphModel:
    types: dict[str, tuple] = {}
    _types(inferred.graph, types)
    constants = {init.name for init in proto.graph.initializer}
    index: dict[str, int] = {}

    def tensor(name: str) -> TensorInfo:
        i = index.setdefault(name, len(index))
        shape, dtype = types.get(name, ((), "?"))
        return TensorInfo(i, name, shape, dtype, name in constants)

    nodes: list[GraphNode] = []
    subgraph_nodes: dict[tuple, list[int]] = {}

    def walk(graph) -> list[int]:
        ids = []
        for init in graph.initializer:
            constants.add(init.name)
        for node in graph.node:
            for attr in node.attribute:
                if attr.HasField("g"):
                    subgraph_nodes[graph_key(attr.g)] = walk(attr.g)
            ids.append(_node(node, len(nodes), tensor, nodes, bad))
        return ids

    bad: dict[str, list[str]] = {}
    top = walk(proto.graph)
    _warn_metadata(path, bad)
    graph = proto.graph
    inputs = [tensor(i.name) for i in graph.input if i.name not in constants]
    outputs = [tensor(o.name) for o in graph.output]
    producer = proto.producer_name + (f" {proto.producer_version}" if proto.producer_version else "")
    opsets = ", ".join(f"{o.domain or 'ai.onnx'} {o.version}" for o in proto.opset_import)
    model = GraphModel(
        "onnx",
        path,
        hashlib.sha256(data).hexdigest(),
        nodes,
        [SubgraphInfo(0, graph.name or "main", inputs, outputs)],
        proto,
        DOCUMENT_PATH,
        [f"producer {producer or '?'}; opset {opsets}; IR version {proto.ir_version}"],
    )
    subgraph_nodes[graph_key(graph)] = top
    model.node_ids = subgraph_nodes  # (sub)graph key -> ids of its nodes, in order
    model.declared_inputs = declared_inputs(proto)
    _explorer_keys(graph, [nodes[i] for i in top])
    return model


def declared_inputs(proto) -> list[tuple[str, tuple | None]]:
    """(name, shape) of each graph input that is not an initializer, as the model declares it:
    a named dimension is its ``dim_param``, an unnamed open one ``?``, no shape at all None."""
    from tvm_explorer.frontends.input_shapes import OPEN

    constants = {init.name for init in proto.graph.initializer}
    out: list[tuple[str, tuple | None]] = []
    for vi in proto.graph.input:
        if vi.name in constants or not vi.type.HasField("tensor_type"):
            continue
        tt = vi.type.tensor_type
        if not tt.HasField("shape"):
            out.append((vi.name, None))
            continue
        out.append(
            (
                vi.name,
                tuple(
                    d.dim_value if d.HasField("dim_value") and d.dim_value > 0 else (d.dim_param or OPEN)
                    for d in tt.shape.dim
                ),
            )
        )
    return out


def pin_inputs(model: GraphModel, shapes: dict[str, tuple[int, ...]]) -> GraphModel:
    """The model with the inputs ``shapes`` names fixed to those sizes in the graph itself (so
    shape inference, the model document, TVM's ``from_onnx(shape_dict=…)`` and onnxruntime
    all see them); the file's digest and declared shapes stay the original's."""
    import onnx

    proto = onnx.ModelProto()
    proto.CopyFrom(model.payload)
    for vi in proto.graph.input:
        if vi.name not in shapes:
            continue
        shape = vi.type.tensor_type.shape
        shape.ClearField("dim")
        for size in shapes[vi.name]:
            shape.dim.add().dim_value = size
    pinned = load_onnx(model.path, proto)
    pinned.sha256, pinned.declared_inputs = model.sha256, model.declared_inputs
    pinned.pinned = dict(shapes)
    return pinned


def _explorer_keys(graph, main_nodes: list[GraphNode]) -> None:
    """Model Explorer's ONNX adapter (model-explorer-onnx) keys a main-graph node by the graph's
    name (empty when it has none: its ``<main>`` is only for a graph without the field) and
    the node's name after onnx_ir's ``NameFixPass``: an
    unnamed node becomes ``node``, ``node_1``, …, a repeated name ``NAME_1``, … in graph order.
    Nodes of nested graphs (If/Loop bodies) live in other graphs there and get no key."""
    graph_id = graph.name
    used: set[str] = set()
    counter: dict[str, int] = {}
    for node in main_nodes:
        preferred = node.name or "node"
        name = preferred
        while name in used:
            counter[preferred] = counter.get(preferred, 0) + 1
            name = f"{preferred}_{counter[preferred]}"
        used.add(name)
        node.explorer_key = (graph_id, name)


_WARNED: set[tuple[str, str]] = set()


def _warn_metadata(path: str, bad: dict[str, list[str]]) -> None:
    """One warning line per malformed metadata key (once per process: numerics and bisect
    read the model again): the model still compiles."""
    import sys

    for key, where in bad.items():
        if (path, key) in _WARNED:
            continue
        _WARNED.add((path, key))
        more = f" and {len(where) - 1} other node(s)" if len(where) > 1 else ""
        print(
            f"tvm-explorer: warning: {path}: metadata {key} of node {where[0]!r}{more} is not a "
            f"list of names; ignored (the module path comes from the node name)",
            file=sys.stderr,
        )


def _node(node, nid: int, tensor, nodes: list, bad: dict) -> int:
    meta = {p.key: p.value for p in node.metadata_props}
    wrong: list[str] = []
    module, cls = _module_of(node.name, meta, wrong)
    for key in wrong:
        bad.setdefault(key, []).append(node.name or f"#{nid} ({node.op_type})")
    source, stack = source_and_stack(meta.get("pkg.torch.onnx.stack_trace"))
    nodes.append(
        GraphNode(
            id=nid,
            op_index=nid,
            opcode=node.op_type,
            inputs=[tensor(i) for i in node.input if i],
            outputs=[tensor(o) for o in node.output if o],
            options=_attributes(node),
            name=node.name,
            module=module,
            module_class=cls,
            source=source,
            stack=stack,
        )
    )
    return nid


def _module_of(name: str, meta: dict, bad: list) -> tuple[str, str]:
    """The module path a node belongs to, from the exporter's name scopes / namespace, or
    from a hierarchical node name (``/backbone/layer1/conv/Conv`` → ``backbone.layer1.conv``).
    Metadata that is not what the exporter writes is ignored (its key added to ``bad``)."""
    names = _names(meta, "pkg.torch.onnx.name_scopes", bad)
    kinds = _names(meta, "pkg.torch.onnx.class_hierarchy", bad) if names else None
    if names:
        path = ".".join(n for n in names[:-1] if n)
        cls = kinds[-2].rsplit(".", 1)[-1] if kinds and len(kinds) >= 2 else ""
        return path, cls
    namespace = meta.get("namespace")
    if namespace:
        pieces = [p.split(":", 1) for p in namespace.split("/")]
        path = ".".join(p[0].strip() for p in pieces[:-1] if p[0].strip())
        cls = pieces[-2][1].strip().rsplit(".", 1)[-1] if len(pieces) >= 2 and len(pieces[-2]) > 1 else ""
        return path, cls
    if name.startswith("/") and name.count("/") >= 2:
        return ".".join(p for p in name.split("/")[1:-1] if p), ""
    return "", ""


MAX_METADATA_CHARS = 1 << 20


def _names(meta: dict, key: str, bad: list) -> list[str] | None:
    """A metadata value the exporter writes as a Python list of strings (``['', 'backbone']``),
    read token by token: no ``ast`` parse, whose nesting limit turns a value like ``[[[[…``
    into a MemoryError. None (and ``key`` in ``bad``) for anything else."""
    text = meta.get(key)
    if not text:
        return None
    names = _string_list(text) if len(text) <= MAX_METADATA_CHARS else None
    if names is None:
        bad.append(key)
    return names


def _string_list(text: str) -> list[str] | None:
    import io
    import tokenize

    tokens = []
    try:
        for tok in tokenize.generate_tokens(io.StringIO(text).readline):
            if tok.type in (tokenize.NEWLINE, tokenize.NL, tokenize.ENDMARKER, tokenize.INDENT, tokenize.DEDENT):
                continue
            tokens.append(tok)
    except (tokenize.TokenError, SyntaxError, ValueError):
        return None
    if len(tokens) < 2 or (tokens[0].string, tokens[-1].string) not in (("[", "]"), ("(", ")")):
        return None
    out = []
    for k, tok in enumerate(tokens[1:-1]):
        if k % 2:
            if tok.string != ",":
                return None
            continue
        if tok.type != tokenize.STRING:
            return None
        try:
            value = ast.literal_eval(tok.string)  # one string literal: no nesting
        except (ValueError, SyntaxError):
            return None
        if not isinstance(value, str):
            return None
        out.append(value)
    return out


def _attributes(node) -> dict:
    """Attributes as short text (tensors and graphs summarised, long lists shortened)."""
    from onnx import helper

    out = {}
    for attr in node.attribute:
        if attr.HasField("g") or attr.graphs:
            out[attr.name] = f"<graph {len(attr.g.node)} nodes>" if attr.HasField("g") else "<graphs>"
            continue
        if attr.HasField("t"):
            dims = ",".join(str(d) for d in attr.t.dims)
            out[attr.name] = f"<tensor {_ELEM_TYPES.get(attr.t.data_type, '?')}[{dims}]>"
            continue
        try:
            value = helper.get_attribute_value(attr)
        except Exception:  # noqa: BLE001
            continue
        if isinstance(value, bytes):
            value = value.decode("utf-8", "replace")
        if isinstance(value, float):
            value = f"{value:g}"
        if isinstance(value, (list, tuple)):
            items = [f"{v:g}" if isinstance(v, float) else str(v) for v in value[:8]]
            value = "[" + ",".join(items) + (",…" if len(value) > 8 else "") + "]"
        out[attr.name] = str(value).replace(" ", "")
    return out


def describe_proto(proto, name: str = "model.onnx") -> GraphModel:
    """An ``onnx.ModelProto`` already in memory, described as if read from ``name``."""
    return load_onnx(name, proto=proto)

"""Sub-models of an ONNX model, for ``tvm-explorer reduce``: the graph's nodes, and a valid
``.onnx`` that keeps only some of them (``onnx.helper``: the same opsets and IR version, the
initializers the kept nodes read, inputs and outputs typed from shape inference).

``Constant`` nodes are not nodes to cut: a kept node that reads one keeps it, so constants
stay constants.
"""

from __future__ import annotations

import re

from tvm_explorer.errors import ModelError
from tvm_explorer.frontends.base import GraphOp, SubgraphWriter


def _proto(path):
    from tvm_explorer.frontends.onnx.loader import load_onnx

    return load_onnx(path).payload


def _constants(graph) -> dict:
    """Tensor name -> the index of the ``Constant`` node that makes it."""
    return {out: i for i, node in enumerate(graph.node) if node.op_type == "Constant" for out in node.output if out}


def ops(path) -> list[GraphOp]:
    """The graph's nodes (``Constant`` nodes aside), the tensors each reads and writes."""
    graph = _proto(path).graph
    inits = {init.name for init in graph.initializer}
    consts = _constants(graph)
    result = []
    for i, node in enumerate(graph.node):
        if node.op_type == "Constant":
            continue
        ins = tuple(n for n in node.input if n and n not in inits and n not in consts)
        outs = tuple(n for n in node.output if n)
        result.append(GraphOp(i, node.op_type, node.name or (outs[0] if outs else ""), ins, outs))
    return result


def _count_nodes(graph) -> int:
    """Nodes (``Constant`` nodes aside) of ``graph`` and of the graphs its nodes hold (If
    branches, Loop and Scan bodies)."""
    from onnx import AttributeProto

    total = 0
    for node in graph.node:
        total += node.op_type != "Constant"
        for attr in node.attribute:
            if attr.type == AttributeProto.GRAPH:
                total += _count_nodes(attr.g)
            elif attr.type == AttributeProto.GRAPHS:
                total += sum(_count_nodes(g) for g in attr.graphs)
    return total


def count_ops(path) -> int:
    """Nodes over all of the model's graphs."""
    return _count_nodes(_proto(path).graph)


def write(path, kept, out_path) -> None:
    """Write an ``.onnx`` holding only the nodes ``kept`` (indices in ``graph.node``)."""
    import onnx
    from onnx import helper

    proto = _proto(path)
    graph = proto.graph
    try:
        inferred = onnx.shape_inference.infer_shapes(proto).graph
    except Exception:  # noqa: BLE001 - types of graph inputs/outputs are then all there is
        inferred = graph
    types = {vi.name: vi for vi in list(inferred.input) + list(inferred.value_info) + list(inferred.output)}
    inits = {init.name: init for init in graph.initializer}
    consts = _constants(graph)
    kept = sorted(set(kept))
    wanted = set(kept)
    for i in kept:  # the Constant nodes kept nodes read
        wanted.update(consts[n] for n in graph.node[i].input if n in consts)
    nodes = [graph.node[i] for i in sorted(wanted)]
    if not any(n.op_type != "Constant" for n in nodes):
        raise ModelError(f"{path}: a sub-model needs at least one node")
    produced = {n for node in nodes for n in node.output if n}
    consumed, order = set(), []
    for node in nodes:
        for n in node.input:
            if n and n not in consumed:
                consumed.add(n)
                order.append(n)
    used_inits = [inits[n] for n in order if n in inits and n not in produced]
    inputs = []
    for n in order:
        if n in produced or n in inits:
            continue
        if n not in types or not types[n].type.HasField("tensor_type"):
            raise ModelError(f"{path}: the type of tensor '{n}' is unknown (shape inference gave none)")
        inputs.append(types[n])
    original_outputs = {o.name for o in graph.output}
    outputs = []
    for node in nodes:
        for n in node.output:
            if n and (n in original_outputs or n not in consumed) and node.op_type != "Constant":
                outputs.append(types[n] if n in types else helper.make_empty_tensor_value_info(n))
    if not outputs:
        raise ModelError(f"{path}: the kept nodes have no output")
    value_info = [types[n] for n in produced if n in types and n not in {o.name for o in outputs}]
    sub = helper.make_graph(
        nodes, f"{graph.name or 'graph'}_reduced", inputs, outputs, used_inits, value_info=value_info
    )
    model = helper.make_model(
        sub,
        opset_imports=list(proto.opset_import),
        producer_name="tvm-explorer reduce",
        functions=list(proto.functions),
    )
    model.ir_version = proto.ir_version
    _complete_types(model)
    onnx.save(model, str(out_path))


def _complete_types(model) -> None:
    """Graph inputs and outputs fully typed, as the checker and onnxruntime want them: a
    negative dimension (some exporters write -1) becomes a named one, and an output whose
    shape the whole model's inference left unknown gets the one inferred on the sub-model."""
    import onnx

    for vi in list(model.graph.input) + list(model.graph.output):
        for i, dim in enumerate(vi.type.tensor_type.shape.dim):
            if dim.HasField("dim_value") and dim.dim_value < 0:
                dim.dim_param = f"{vi.name}_d{i}"
    missing = [o for o in model.graph.output if not o.type.tensor_type.HasField("shape")]
    if not missing:
        return
    try:
        inferred = onnx.shape_inference.infer_shapes(model)
    except Exception:  # noqa: BLE001 - the outputs stay as they are
        return
    known = {vi.name: vi for vi in list(inferred.graph.value_info) + list(inferred.graph.output)}
    for out in missing:
        found = known.get(out.name)
        if found is not None and found.type.tensor_type.HasField("shape"):
            out.type.CopyFrom(found.type)


_BLAMED = re.compile(r"node \d+ \(([A-Za-z0-9_.]+)[ ,)]")


def blamed_opcode(message: str) -> str | None:
    """``Reshape`` from ``m.onnx: … node 5 (Reshape 'Reshape@18') …``."""
    found = _BLAMED.search(message)
    return found.group(1) if found else None


STOCK_IMPORT = """\
import onnx
from tvm.relax.frontend.onnx import from_onnx

mod = from_onnx(onnx.load(path))
"""

WRITER = SubgraphWriter(
    ops=ops, write=write, blamed_opcode=blamed_opcode, stock_import=STOCK_IMPORT, count_ops=count_ops
)

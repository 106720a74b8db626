"""Sub-models of a TFLite model, for ``tvm-explorer reduce``: the main subgraph's operators,
and a valid ``.tflite`` that keeps only some of them.

The flatbuffer is unpacked and packed again with the generated object API of the TFLite
schema that LiteRT ships (``ai_edge_litert.schema_py_generated``: the same schema the
``tflite`` package reads), so every table is copied whole — builtin and custom options,
quantization parameters, sparsity, shape signatures, operator codes, the other subgraphs a
kept operator runs (the bodies of WHILE/IF, CALL_ONCE's initializer, StableHLO bodies) — and
only the main subgraph's operator, tensor and input/output lists, the subgraph list and the
buffer list change. A subgraph that no kept operator runs (directly or through another
subgraph) is dropped, and the indices that name subgraphs are renumbered. Signature defs and
metadata, which name tensors by index, are left out.
"""

from __future__ import annotations

import os
import re

from tvm_explorer.errors import ModelError
from tvm_explorer.frontends.base import GraphOp, SubgraphWriter


def _schema():
    from ai_edge_litert import schema_py_generated

    return schema_py_generated


def _unpack(path):
    from tvm_explorer.frontends.model_file import read_model_bytes

    data = read_model_bytes(os.fspath(path), "a TFLite model")
    try:
        return _schema().ModelT.InitFromPackedBuf(data, 0)
    except Exception as err:  # noqa: BLE001 - a damaged flatbuffer
        raise ModelError(f"{path}: cannot read the TFLite flatbuffer ({type(err).__name__}: {err})") from None


def _ints(values) -> list[int]:
    return [] if values is None else [int(v) for v in values]


def _is_constant(model, tensor) -> bool:
    if tensor.buffer is None or tensor.buffer <= 0 or tensor.buffer >= len(model.buffers or []):
        return False
    buf = model.buffers[tensor.buffer]
    return (buf.data is not None and len(buf.data) > 0) or bool(getattr(buf, "size", 0))


# Option fields that name subgraphs (the schema's WHILE, IF, CALL, CALL_ONCE and StableHLO
# options): an index, or a list of them.
_SUBGRAPH_FIELDS = ("subgraph", "branchSubgraphIndices", "calledComputations")


def _subgraph_fields(op):
    """(options, field) of every option field of ``op`` that names subgraphs."""
    for options in (op.builtinOptions, getattr(op, "builtinOptions2", None)):
        if options is None:
            continue
        for field in vars(options):
            if field.endswith("SubgraphIndex") or field in _SUBGRAPH_FIELDS:
                yield options, field


def _is_list(value) -> bool:
    return isinstance(value, (list, tuple)) or getattr(value, "ndim", 0) > 0  # a numpy vector


def _called(op) -> list[int]:
    """The subgraphs ``op`` runs."""
    found: list[int] = []
    for options, field in _subgraph_fields(op):
        value = getattr(options, field)
        if value is not None:
            found += [int(v) for v in value] if _is_list(value) else [int(value)]
    return found


def _reachable(model) -> list[int]:
    """The subgraphs the main one runs, directly or through others: the main one first."""
    kept, todo = [0], [0]
    while todo:
        for op in model.subgraphs[todo.pop()].operators or []:
            for s in _called(op):
                if 0 <= s < len(model.subgraphs) and s not in kept:
                    kept.append(s)
                    todo.append(s)
    return sorted(kept)


def _renumber(model, kept: list[int]) -> None:
    """Keep only subgraphs ``kept`` (sorted, main first), renaming the indices that name them."""
    new = {old: i for i, old in enumerate(kept)}
    model.subgraphs = [model.subgraphs[s] for s in kept]
    for sg in model.subgraphs:
        for op in sg.operators or []:
            for options, field in _subgraph_fields(op):
                value = getattr(options, field)
                if value is None:
                    continue
                if _is_list(value):
                    setattr(options, field, [new[int(v)] for v in value])
                else:
                    setattr(options, field, new[int(value)])


def count_ops(path) -> int:
    """Operators over all subgraphs (the main one, WHILE/IF bodies, initializers)."""
    return sum(len(sg.operators or []) for sg in _unpack(path).subgraphs)


def _text(table) -> str:
    """A tensor's or subgraph's name."""
    raw = table.name
    return raw.decode("utf-8", "replace") if isinstance(raw, bytes) else str(raw or "")


def _op_name(model, sg, op, index: int) -> str:
    """Its first output tensor's name; for an operator that writes no named tensor (CALL_ONCE,
    ASSIGN_VARIABLE) what it runs or reads, so no row of a report is blank."""
    outs = [t for t in _ints(op.outputs) if t >= 0]
    if outs and _text(sg.tensors[outs[0]]):
        return _text(sg.tensors[outs[0]])
    called = [s for s in _called(op) if 0 <= s < len(model.subgraphs)]
    if called:
        return "runs " + ", ".join(
            f"subgraph {s}" + (f" '{_text(model.subgraphs[s])}'" if model.subgraphs[s].name else "") for s in called
        )
    read = [_text(sg.tensors[t]) for t in _ints(op.inputs) if t >= 0 and _text(sg.tensors[t])]
    if read:
        return f"(no output tensor; first input {read[0]})"
    return f"operator {index}"


def _opcode_name(model, op) -> str:
    """As the loader names it (``RESHAPE``, ``CUSTOM:<code>``), so that the operator kind a
    failure message names is found among the operators."""
    from tvm_explorer.frontends.tflite.loader import _opcode_names

    code = model.operatorCodes[op.opcodeIndex]
    builtin = max(int(code.builtinCode or 0), int(code.deprecatedBuiltinCode or 0))
    name = _opcode_names().get(builtin, f"UNKNOWN_{builtin}")
    if name == "CUSTOM":
        custom = code.customCode
        if custom:
            return f"CUSTOM:{custom.decode('utf-8', 'replace') if isinstance(custom, bytes) else custom}"
    return name


def ops(path) -> list[GraphOp]:
    """The main subgraph's operators: the tensors each reads (not constants) and writes."""
    model = _unpack(path)
    sg = model.subgraphs[0]
    result = []
    for i, op in enumerate(sg.operators or []):
        ins = [t for t in _ints(op.inputs) if t >= 0 and not _is_constant(model, sg.tensors[t])]
        outs = [t for t in _ints(op.outputs) if t >= 0]
        name = _op_name(model, sg, op, i)
        result.append(
            GraphOp(i, _opcode_name(model, op), name, tuple(f"t{t}" for t in ins), tuple(f"t{t}" for t in outs))
        )
    return result


def write(path, kept, out_path) -> None:
    """Write a ``.tflite`` holding only the main subgraph's operators ``kept`` (indices), and
    the subgraphs they run."""
    import flatbuffers

    model = _unpack(path)
    sg = model.subgraphs[0]
    kept = sorted(set(kept))
    operators = [sg.operators[i] for i in kept]
    if not operators:
        raise ModelError(f"{path}: a sub-model needs at least one operator")
    produced, consumed, order = set(), set(), []
    for op in operators:
        for t in _ints(op.inputs) + _ints(op.intermediates):
            if t >= 0:
                consumed.add(t)
                if t not in order:
                    order.append(t)
        for t in _ints(op.outputs):
            if t >= 0:
                produced.add(t)
                if t not in order:
                    order.append(t)
    originally_out = set(_ints(sg.outputs))
    inputs = [
        t
        for t in order
        if t in consumed
        and t not in produced
        and not _is_constant(model, sg.tensors[t])
        and not sg.tensors[t].isVariable
        and not any(t in _ints(op.intermediates) for op in operators)
    ]
    outputs = [t for t in order if t in produced and (t in originally_out or t not in consumed)]
    remap = {t: i for i, t in enumerate(sorted(order))}
    tensors = [sg.tensors[t] for t in sorted(order)]

    sg.operators = operators
    _renumber(model, _reachable(model))
    # Buffers: the empty buffer 0, then those the kept tensors (and kept subgraphs) use.
    buffers, new_buffer = [model.buffers[0]] if model.buffers else [_schema().BufferT()], {0: 0}
    every = tensors + [t for other in model.subgraphs[1:] for t in (other.tensors or [])]
    for tensor in every:
        b = int(tensor.buffer or 0)
        if b not in new_buffer:
            new_buffer[b] = len(buffers)
            buffers.append(model.buffers[b])
        tensor.buffer = new_buffer[b]

    def mapped(values):
        return [remap[t] if t >= 0 else -1 for t in _ints(values)]

    for op in operators:
        op.inputs = mapped(op.inputs)
        op.outputs = mapped(op.outputs)
        if op.intermediates is not None:
            op.intermediates = mapped(op.intermediates)
    sg.tensors = tensors
    sg.inputs = [remap[t] for t in inputs]
    sg.outputs = [remap[t] for t in outputs]
    model.buffers = buffers
    model.signatureDefs = None
    model.metadata = None
    model.metadataBuffer = None
    builder = flatbuffers.Builder(1024)
    builder.Finish(model.Pack(builder), file_identifier=b"TFL3")
    with open(out_path, "wb") as fh:
        fh.write(bytes(builder.Output()))


_BLAMED = re.compile(r"operator \d+ \(([^,)\s]+)[,)]")


def blamed_opcode(message: str) -> str | None:
    """``RESHAPE`` from ``m.tflite: operator 3 (RESHAPE, output tensor …) cannot be …``."""
    found = _BLAMED.search(message)
    return found.group(1) if found else None


STOCK_IMPORT = """\
import tflite
from tvm.relax.frontend.tflite import from_tflite

with open(path, "rb") as fh:
    buf = fh.read()
mod = from_tflite(tflite.Model.GetRootAsModel(buf, 0))
"""

WRITER = SubgraphWriter(
    ops=ops, write=write, blamed_opcode=blamed_opcode, stock_import=STOCK_IMPORT, count_ops=count_ops
)

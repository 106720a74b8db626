"""Read a TFLite flatbuffer and describe its operators as layers.

Every failure becomes a ``ModelError`` naming the file (and the operator, where one is at
fault): empty, truncated or foreign files must never surface as a traceback.
"""

from __future__ import annotations

import hashlib
import numbers
import os
from dataclasses import dataclass, field
from typing import Any

from tvm_explorer.errors import ModelError
from tvm_explorer.frontends.model import SubgraphInfo, TensorInfo
from tvm_explorer.frontends.model_file import MAX_MODEL_BYTES, read_model_bytes

TFLITE_IDENTIFIER = b"TFL3"

_DTYPES = {
    0: "float32",
    1: "float16",
    2: "int32",
    3: "uint8",
    4: "int64",
    5: "string",
    6: "bool",
    7: "int16",
    8: "complex64",
    9: "int8",
    10: "float64",
    11: "complex128",
    12: "uint64",
    13: "resource",
    14: "variant",
    15: "uint32",
    16: "uint16",
    17: "int4",
}


@dataclass
class LayerInfo:
    """One TFLite operator: the unit every provenance answer points back to."""

    id: int
    subgraph: int
    op_index: int
    opcode: str
    inputs: list[TensorInfo]
    outputs: list[TensorInfo]
    options: dict = field(default_factory=dict)
    tf_name: str | None = None  # set by load_model from the whole model (``frontends/tflite/names.py``)
    explorer_key: tuple[str, str] | None = None  # Model Explorer's (graph id, node id): see layer_table

    @property
    def name(self) -> str:
        """The layer's TF name (``model_1/conv2d_7``): its filter's scope, or its output
        tensor's (``frontends/tflite/names.py``)."""
        if self.tf_name is not None:
            return self.tf_name
        from tvm_explorer.frontends.tflite.names import layer_name

        return layer_name(self.opcode, [t.name for t in self.outputs])

    @property
    def label(self) -> str:
        """``op 12 CONV_2D`` (with the subgraph when it is not the main one)."""
        where = f"subgraph {self.subgraph} " if self.subgraph else ""
        return f"{where}op {self.op_index} {self.opcode}"


@dataclass
class LoadedModel:
    """A parsed TFLite model with its layer table (a ``frontends.model.Model``)."""

    path: str
    data: bytes
    sha256: str
    model: Any  # tflite.Model (the tflite package is untyped)
    subgraphs: list[SubgraphInfo]
    layers: list[LayerInfo]
    pinned: dict = field(default_factory=dict)
    """``--input-shape``: input name -> the sizes it is imported with (``frontends/input_shapes.py``)."""

    @property
    def kind(self) -> str:
        return "tflite"

    @property
    def name(self) -> str:
        """The model's file name (bytes that are not UTF-8 shown as ``\\xff`` escapes, so the
        name can go into documents and messages)."""
        return os.fsencode(os.path.basename(self.path)).decode("utf-8", "backslashreplace")

    def layer(self, subgraph: int, op_index: int) -> LayerInfo:
        """The layer of operator ``op_index`` in ``subgraph``."""
        return self._by_op[(subgraph, op_index)]

    def __post_init__(self):
        self._by_op = {(lay.subgraph, lay.op_index): lay for lay in self.layers}


def declared_inputs(model: LoadedModel) -> list[tuple[str, tuple]]:
    """(name, shape) of each main-subgraph input as the converter declared it: its
    ``shape_signature``, where ``-1`` is a dynamic dimension (TVM's importer reads ``shape``,
    the converter's example size, instead), else its shape."""
    out: list[tuple[str, tuple]] = []
    if not model.subgraphs:
        return out
    sg = model.model.Subgraphs(0)
    frozen = frozen_inputs(model)
    for t in model.subgraphs[0].inputs:
        tensor = sg.Tensors(t.index)
        signature = tuple(int(d) for d in tensor.ShapeSignatureAsNumpy()) if tensor.ShapeSignatureLength() else ()
        out.append((t.name, signature if len(signature) == len(frozen[t.name]) else frozen[t.name]))
    return out


def frozen_inputs(model: LoadedModel) -> dict[str, tuple]:
    """Each main-subgraph input's shape as the flatbuffer stores it (the converter's example)."""
    sg = model.model.Subgraphs(0)
    out = {}
    for t in model.subgraphs[0].inputs if model.subgraphs else []:
        tensor = sg.Tensors(t.index)
        out[t.name] = tuple(int(d) for d in tensor.ShapeAsNumpy()) if tensor.ShapeLength() else ()
    return out


def _propagated_shapes(model: LoadedModel, shapes: dict[str, tuple[int, ...]]) -> dict[int, tuple[int, ...]]:
    """Every main-subgraph tensor's shape at the pinned input sizes, as LiteRT's shape
    propagation gives it ({} without LiteRT); ModelError if LiteRT cannot take those sizes."""
    try:
        from ai_edge_litert.interpreter import Interpreter, OpResolverType
    except ImportError:
        return {}
    import warnings

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            it = Interpreter(
                model_content=model.data,
                experimental_op_resolver_type=OpResolverType.BUILTIN_WITHOUT_DEFAULT_DELEGATES,
            )
            for d in it.get_input_details():
                if d["name"] in shapes:
                    it.resize_tensor_input(d["index"], list(shapes[d["name"]]))
            it.allocate_tensors()
    except (ValueError, RuntimeError) as err:
        given = ", ".join(f"{n}={','.join(map(str, v))}" for n, v in shapes.items())
        raise ModelError(
            f"{model.path}: the model does not take --input-shape {given}: LiteRT cannot size its tensors "
            f"({' '.join(str(err).split())[:300]}); the converter froze the model's inner shapes at its example input"
        ) from None
    return {int(d["index"]): tuple(int(x) for x in d["shape"]) for d in it.get_tensor_details()}


def pin_inputs(model: LoadedModel, shapes: dict[str, tuple[int, ...]]) -> LoadedModel:
    """The model, imported with the inputs ``shapes`` names at those sizes (TVM's
    ``from_tflite(shape_dict=…)``); its main-subgraph tensors described at the sizes LiteRT
    propagates from them (the inputs alone without LiteRT)."""
    import dataclasses

    sizes = _propagated_shapes(model, shapes)

    def pinned(t: TensorInfo, s: int) -> TensorInfo:
        if s != 0:
            return t
        if t.name in shapes and t.index in {i.index for i in model.subgraphs[0].inputs}:
            return dataclasses.replace(t, shape=tuple(shapes[t.name]))
        if t.index in sizes and len(sizes[t.index]) == len(t.shape) and not t.is_constant:
            return dataclasses.replace(t, shape=sizes[t.index])
        return t

    subgraphs = [
        dataclasses.replace(
            sg, inputs=[pinned(t, sg.index) for t in sg.inputs], outputs=[pinned(t, sg.index) for t in sg.outputs]
        )
        for sg in model.subgraphs
    ]
    layers = [
        dataclasses.replace(
            lay,
            inputs=[pinned(t, lay.subgraph) for t in lay.inputs],
            outputs=[pinned(t, lay.subgraph) for t in lay.outputs],
        )
        for lay in model.layers
    ]
    for old, new in zip(model.layers, layers):
        new.tf_name, new.explorer_key = old.tf_name, old.explorer_key
    return LoadedModel(model.path, model.data, model.sha256, model.model, subgraphs, layers, dict(shapes))


def _opcode_names() -> dict[int, str]:
    from tflite.BuiltinOperator import BuiltinOperator

    return {v: k for k, v in vars(BuiltinOperator).items() if not k.startswith("_")}


def opcode_of(model, op, names: dict[int, str]) -> str:
    """The builtin opcode name of ``op`` (``CUSTOM:<code>`` for custom operators)."""
    op_code = model.OperatorCodes(op.OpcodeIndex())
    code = max(op_code.DeprecatedBuiltinCode(), op_code.BuiltinCode())
    name = names.get(code, f"UNKNOWN_{code}")
    if name == "CUSTOM":
        custom = op_code.CustomCode()
        return f"CUSTOM:{custom.decode('utf-8', 'replace')}" if custom else "CUSTOM"
    return name


def _tensor_info(model, subgraph, index: int) -> TensorInfo:
    tensor = subgraph.Tensors(index)
    raw_name = tensor.Name()
    name = raw_name.decode("utf-8", "replace") if raw_name else f"tvmgen_tensor_{index}"
    shape = tuple(int(d) for d in tensor.ShapeAsNumpy()) if tensor.ShapeLength() else ()
    buffer = model.Buffers(tensor.Buffer()) if tensor.Buffer() < model.BuffersLength() else None
    is_const = bool(buffer is not None and (buffer.DataLength() > 0 or buffer.Offset() > 1))
    quant = tensor.Quantization()
    quantized = bool(quant is not None and quant.ScaleLength() > 0)
    scales: tuple[float, ...] = ()
    zero_points: tuple[int, ...] = ()
    if quantized:
        scales = tuple(float(x) for x in quant.ScaleAsNumpy())
        if quant.ZeroPointLength():
            zero_points = tuple(int(x) for x in quant.ZeroPointAsNumpy())
    return TensorInfo(
        index, name, shape, _DTYPES.get(tensor.Type(), f"type{tensor.Type()}"), is_const, quantized, scales, zero_points
    )


def _options(op) -> dict:
    """Scalar builtin options of an operator (strides, padding, fused activation, ...)."""
    from tflite.BuiltinOptions import BuiltinOptions

    kind = op.BuiltinOptionsType()
    names = {v: k for k, v in vars(BuiltinOptions).items() if not k.startswith("_")}
    cls_name = names.get(kind)
    table = op.BuiltinOptions()
    if not cls_name or cls_name == "NONE" or table is None:
        return {}
    try:
        module = __import__(f"tflite.{cls_name}", fromlist=[cls_name])
        opts = getattr(module, cls_name)()
        opts.Init(table.Bytes, table.Pos)
    except (ImportError, AttributeError):
        return {}
    out = {}
    for attr in dir(opts):
        if attr.startswith("_") or attr in ("Init",) or attr.endswith(("AsNumpy", "Length", "IsNone")):
            continue
        if attr.startswith("GetRootAs") or attr.startswith(cls_name):
            continue
        fn = getattr(opts, attr)
        if not callable(fn):
            continue
        try:
            value = fn()
        except TypeError:
            continue
        if isinstance(value, numbers.Real):  # numpy's integers and floats too
            out[attr] = value.item() if hasattr(value, "item") else value
    return out


def load_model(path: str | os.PathLike, limit: int = MAX_MODEL_BYTES) -> LoadedModel:
    """Read and validate a TFLite model (of at most ``limit`` bytes); raise ModelError naming
    the file if it is not one."""
    path = os.fspath(path)
    data = read_model_bytes(path, "a TFLite model", limit)
    if len(data) < 8 or data[4:8] != TFLITE_IDENTIFIER:
        raise ModelError(f"{path}: not a TFLite model (no 'TFL3' flatbuffer identifier)")
    return _parse(path, data)  # _parse turns every reader failure into a ModelError


# Limits checked before TVM sees a model: beyond them TVM would allocate gigabytes (constant
# folding materialises tensors) or index past int32, which no real TFLite model needs.
MAX_TENSOR_BYTES = 2 * 1024**3
_DTYPE_BYTES = {
    0: 4,
    1: 2,
    2: 4,
    3: 1,
    4: 8,
    6: 1,
    7: 2,
    8: 8,
    9: 1,
    10: 8,
    11: 16,
    12: 8,
    15: 4,
    16: 2,
}  # fixed-size element types (string, resource, variant, int4: no)
# Builtin options that must be at least 1 (0 divides by zero in TVM's shape arithmetic).
_POSITIVE_OPTIONS = (
    "StrideH",
    "StrideW",
    "StrideD",
    "DilationHFactor",
    "DilationWFactor",
    "DilationDFactor",
    "FilterHeight",
    "FilterWidth",
)


class _Where:
    """What is being read, so that a damaged flatbuffer is reported with its place."""

    def __init__(self):
        self.text = "the model header"


def _check_tensor(path: str, model, sg, s: int, t: int, size: int, where: _Where):
    """Read every field of tensor ``t`` the importer reads, and check it is sane.
    Returns (is_constant, is_variable)."""
    where.text = f"subgraph {s} tensor {t}"
    tensor = sg.Tensors(t)
    raw = tensor.Name()
    try:
        name = raw.decode("utf-8") if raw else f"tvmgen_tensor_{t}"
    except UnicodeDecodeError:
        raise ModelError(f"{path}: subgraph {s} tensor {t}: name is not valid UTF-8 ({raw[:40]!r})") from None
    label = f"{path}: subgraph {s} tensor {t} '{name}'"
    shape = [int(d) for d in tensor.ShapeAsNumpy()] if tensor.ShapeLength() else []
    if any(d < 0 for d in shape):
        raise ModelError(f"{label}: shape {shape} has a negative dimension")
    ttype = tensor.Type()
    if ttype not in _DTYPES:
        raise ModelError(f"{label}: unknown tensor type {ttype}")
    elements = 1
    for d in shape:
        elements *= d
    nbytes = elements * _DTYPE_BYTES.get(ttype, 1)
    if nbytes > MAX_TENSOR_BYTES:
        raise ModelError(
            f"{label}: shape {shape} of {_DTYPES[ttype]} needs {nbytes / 2**30:.1f} GiB, "
            f"more than the {MAX_TENSOR_BYTES // 2**30} GiB a tensor may have"
        )
    b = tensor.Buffer()
    if not 0 <= b < model.BuffersLength():
        raise ModelError(f"{label}: refers to buffer {b}, which does not exist (the model has {model.BuffersLength()})")
    where.text = f"subgraph {s} tensor {t} '{name}' (buffer {b})"
    buffer = model.Buffers(b)
    n_data = buffer.DataLength()
    if n_data:
        buffer.DataAsNumpy()  # the vector must lie inside the file
    offset = buffer.Offset()
    if offset > 1 and offset + buffer.Size() > size:
        raise ModelError(f"{label}: buffer {b} lies past the end of the file (truncated model?)")
    quant = tensor.Quantization()
    if quant is not None:
        where.text = f"subgraph {s} tensor {t} '{name}' (quantization)"
        if quant.ScaleLength():
            quant.ScaleAsNumpy()
        if quant.ZeroPointLength():
            quant.ZeroPointAsNumpy()
    sparse = tensor.Sparsity() is not None
    if n_data and not sparse and ttype in _DTYPE_BYTES and n_data != nbytes:
        raise ModelError(
            f"{label}: constant data has {n_data} bytes, but shape {shape} of {_DTYPES[ttype]} needs {nbytes}"
        )
    return bool(n_data or offset > 1), bool(tensor.IsVariable())


def _parse(path: str, data: bytes) -> LoadedModel:
    where = _Where()
    try:
        return _parse_at(path, data, where)
    except ModelError:
        raise
    except Exception as err:  # noqa: BLE001 - any reader failure means a damaged flatbuffer
        raise ModelError(
            f"{path}: damaged or truncated TFLite model (at {where.text}: {type(err).__name__}: {err})"
        ) from None


def _parse_at(path: str, data: bytes, where: _Where) -> LoadedModel:
    import tflite

    model = tflite.Model.GetRootAsModel(data, 0)
    n_sub = model.SubgraphsLength()
    if n_sub < 1:
        raise ModelError(f"{path}: TFLite model has no subgraph")
    names = _opcode_names()
    where.text = "the operator code table"
    for c in range(model.OperatorCodesLength()):
        model.OperatorCodes(c).CustomCode()
    subgraphs: list[SubgraphInfo] = []
    layers: list[LayerInfo] = []
    for s in range(n_sub):
        where.text = f"subgraph {s}"
        sg = model.Subgraphs(s)
        n_tensors = sg.TensorsLength()
        defined = set()  # tensors with a value before the next operator runs
        for t in range(n_tensors):
            constant, variable = _check_tensor(path, model, sg, s, t, len(data), where)
            if constant or variable:
                defined.add(t)
        where.text = f"subgraph {s}"

        def tensors(indices, sg=sg, n_tensors=n_tensors, s=s):
            out = []
            for t in indices:
                t = int(t)
                if t < 0:
                    continue  # optional input left out
                if t >= n_tensors:
                    raise ModelError(f"{path}: subgraph {s} refers to tensor {t}, which does not exist")
                out.append(_tensor_info(model, sg, t))
            return out

        raw_name = sg.Name()
        sg_name = raw_name.decode("utf-8", "replace") if raw_name else ("main" if s == 0 else f"subgraph_{s}")
        sg_inputs = tensors(sg.InputsAsNumpy() if sg.InputsLength() else [])
        sg_outputs = tensors(sg.OutputsAsNumpy() if sg.OutputsLength() else [])
        subgraphs.append(SubgraphInfo(s, sg_name, sg_inputs, sg_outputs))
        defined.update(t.index for t in sg_inputs)
        for i in range(sg.OperatorsLength()):
            where.text = f"subgraph {s} operator {i}"
            op = sg.Operators(i)
            if op.OpcodeIndex() >= model.OperatorCodesLength():
                raise ModelError(f"{path}: subgraph {s} operator {i} has an invalid opcode index")
            layer = LayerInfo(
                id=len(layers),
                subgraph=s,
                op_index=i,
                opcode=opcode_of(model, op, names),
                inputs=tensors(op.InputsAsNumpy() if op.InputsLength() else []),
                outputs=tensors(op.OutputsAsNumpy() if op.OutputsLength() else []),
                options=_options(op),
                # Model Explorer's TFLite adapter: the subgraph's name ("main" / "subgraph_N"
                # when unnamed, as here) and the operator's index in it.
                explorer_key=(sg_name, str(i)),
            )
            if op.CustomOptionsLength():
                op.CustomOptionsAsNumpy()
            _check_layer(path, layer, defined)
            defined.update(t.index for t in layer.outputs)
            layers.append(layer)
        for t in sg_outputs:
            if t.index not in defined:
                raise ModelError(
                    f"{path}: subgraph {s} output tensor {t.index} '{t.name}' is "
                    "produced by no operator and is not an input or a constant"
                )
    from tvm_explorer.frontends.tflite.names import model_layer_names

    for layer, name in zip(layers, model_layer_names(layers)):
        layer.tf_name = name
    digest = hashlib.sha256(data).hexdigest()
    return LoadedModel(path, data, digest, model, subgraphs, layers)


def _check_layer(path: str, layer: LayerInfo, defined: set[int]) -> None:
    """Options TVM would divide by, and inputs nothing computes, named at the operator."""
    where = f"{path}: {layer.label}"
    for key in _POSITIVE_OPTIONS:
        value = layer.options.get(key)
        if value is not None and value < 1:
            raise ModelError(f"{where}: option {key} is {value} (must be at least 1)")
    for t in layer.inputs:
        if t.index not in defined:
            raise ModelError(
                f"{where}: input tensor {t.index} '{t.name}' is produced by no earlier "
                "operator and is not an input, a constant or a variable"
            )


def preview_model(path: str | os.PathLike) -> LoadedModel:
    """A model read only to show its document: at most ``preview.MAX_PREVIEW_BYTES``."""
    from tvm_explorer.frontends.preview import MAX_PREVIEW_BYTES

    return load_model(path, MAX_PREVIEW_BYTES)

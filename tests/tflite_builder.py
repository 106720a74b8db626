"""Build small float32 TFLite models with the ``tflite`` flatbuffer builders.

For tests with ground truth by construction (every layer distinguishable) and for synthetic
benchmark models of any depth. Weights are deterministic (seeded)."""

from __future__ import annotations

from dataclasses import dataclass, field

import flatbuffers
import numpy as np


@dataclass
class _Tensor:
    name: str
    shape: list[int]
    dtype: str = "float32"
    data: bytes | None = None


@dataclass
class _Op:
    opcode: str
    inputs: list[int]
    outputs: list[int]
    options: tuple[str, dict] | None = None


@dataclass
class GraphBuilder:
    """A one-subgraph float32 model, built operator by operator."""

    seed: int = 0
    tensors: list[_Tensor] = field(default_factory=list)
    ops: list[_Op] = field(default_factory=list)
    inputs: list[int] = field(default_factory=list)
    outputs: list[int] = field(default_factory=list)

    def __post_init__(self):
        self._rng = np.random.default_rng(self.seed)

    # -- tensors ---------------------------------------------------------------------
    def _tensor(self, name, shape, dtype="float32", data=None) -> int:
        self.tensors.append(_Tensor(name, list(shape), dtype, data))
        return len(self.tensors) - 1

    def input(self, name: str, shape) -> int:
        """A graph input."""
        t = self._tensor(name, shape)
        self.inputs.append(t)
        return t

    def const(self, name: str, array: np.ndarray) -> int:
        """A constant tensor."""
        array = np.ascontiguousarray(array)
        dtype = {"float32": "float32", "int32": "int32", "float16": "float16"}[str(array.dtype)]
        return self._tensor(name, array.shape, dtype, array.tobytes())

    def weights(self, name: str, shape) -> int:
        """A constant float32 tensor of small random values."""
        return self.const(name, (self._rng.standard_normal(shape) * 0.1).astype(np.float32))

    def shape(self, t: int) -> list[int]:
        """Shape of a tensor."""
        return self.tensors[t].shape

    def output(self, t: int) -> None:
        """Mark a tensor as a graph output."""
        self.outputs.append(t)

    def _op(self, opcode, inputs, out_name, out_shape, options=None) -> int:
        out = self._tensor(out_name, out_shape)
        self.ops.append(_Op(opcode, list(inputs), [out], options))
        return out

    # -- operators -------------------------------------------------------------------
    def conv2d(
        self,
        x: int,
        filters: int,
        kernel: int = 3,
        name: str = "conv",
        *,
        activation: str = "NONE",
        padding: str = "VALID",
    ) -> int:
        """CONV_2D with bias (stride 1)."""
        n, h, w, c = self.shape(x)
        weight = self.weights(f"{name}/weights", [filters, kernel, kernel, c])
        bias = self.weights(f"{name}/bias", [filters])
        oh, ow = (h, w) if padding == "SAME" else (h - kernel + 1, w - kernel + 1)
        return self._op(
            "CONV_2D",
            [x, weight, bias],
            f"{name}/output",
            [n, oh, ow, filters],
            (
                "Conv2DOptions",
                {
                    "Padding": _PADDING[padding],
                    "StrideW": 1,
                    "StrideH": 1,
                    "FusedActivationFunction": _ACT[activation],
                    "DilationWFactor": 1,
                    "DilationHFactor": 1,
                },
            ),
        )

    def dequantize(self, t: int, name: str = "dequantize") -> int:
        """DEQUANTIZE (a float16 constant to float32, as converters store fp16 weights)."""
        return self._op("DEQUANTIZE", [t], f"{name}/output", self.shape(t))

    def conv2d_fp16_weights(self, x: int, filters: int, kernel: int = 3, name: str = "conv") -> int:
        """CONV_2D (RELU, valid padding) whose weights and bias are float16 constants, each
        through a DEQUANTIZE of its own: three layers, the first two all-constant."""
        n, h, w, c = self.shape(x)
        w16 = self.const(
            f"{name}/weights_fp16", (self._rng.standard_normal([filters, kernel, kernel, c]) * 0.1).astype(np.float16)
        )
        b16 = self.const(f"{name}/bias_fp16", (self._rng.standard_normal([filters]) * 0.1).astype(np.float16))
        weight, bias = self.dequantize(w16, f"{name}/weights"), self.dequantize(b16, f"{name}/bias")
        return self._op(
            "CONV_2D",
            [x, weight, bias],
            f"{name}/output",
            [n, h - kernel + 1, w - kernel + 1, filters],
            (
                "Conv2DOptions",
                {
                    "Padding": _PADDING["VALID"],
                    "StrideW": 1,
                    "StrideH": 1,
                    "FusedActivationFunction": _ACT["RELU"],
                    "DilationWFactor": 1,
                    "DilationHFactor": 1,
                },
            ),
        )

    def add(self, a: int, b: int, name: str = "add") -> int:
        """ADD (with broadcasting of ``b``)."""
        return self._op("ADD", [a, b], f"{name}/output", self.shape(a), ("AddOptions", {"FusedActivationFunction": 0}))

    def mul(self, a: int, b: int, name: str = "mul") -> int:
        """MUL (with broadcasting of ``b``)."""
        return self._op("MUL", [a, b], f"{name}/output", self.shape(a), ("MulOptions", {"FusedActivationFunction": 0}))

    def relu(self, x: int, name: str = "relu") -> int:
        """RELU."""
        return self._op("RELU", [x], f"{name}/output", self.shape(x))

    def reshape(self, x: int, shape, name: str = "reshape") -> int:
        """RESHAPE to a static shape."""
        target = self.const(f"{name}/shape", np.array(shape, dtype=np.int32))
        return self._op("RESHAPE", [x, target], f"{name}/output", list(shape), ("ReshapeOptions", {}))

    def fully_connected(self, x: int, units: int, name: str = "dense") -> int:
        """FULLY_CONNECTED with bias on a [batch, features] input."""
        batch, features = self.shape(x)
        weight = self.weights(f"{name}/weights", [units, features])
        bias = self.weights(f"{name}/bias", [units])
        return self._op(
            "FULLY_CONNECTED",
            [x, weight, bias],
            f"{name}/output",
            [batch, units],
            ("FullyConnectedOptions", {"FusedActivationFunction": 0}),
        )

    def max_pool(self, x: int, size: int = 2, name: str = "pool") -> int:
        """MAX_POOL_2D with stride = size."""
        n, h, w, c = self.shape(x)
        return self._op(
            "MAX_POOL_2D",
            [x],
            f"{name}/output",
            [n, h // size, w // size, c],
            (
                "Pool2DOptions",
                {
                    "Padding": 1,
                    "StrideW": size,
                    "StrideH": size,
                    "FilterWidth": size,
                    "FilterHeight": size,
                    "FusedActivationFunction": 0,
                },
            ),
        )

    def softmax(self, x: int, name: str = "softmax") -> int:
        """SOFTMAX (beta 1)."""
        return self._op("SOFTMAX", [x], f"{name}/output", self.shape(x), ("SoftmaxOptions", {"Beta": 1.0}))

    # -- serialisation -----------------------------------------------------------------
    def build(self) -> bytes:
        """The model as TFLite flatbuffer bytes."""
        import tflite
        from tflite.BuiltinOperator import BuiltinOperator
        from tflite.BuiltinOptions import BuiltinOptions

        b = flatbuffers.Builder(1024)

        def int_vector(values):
            return b.CreateNumpyVector(np.array(values, dtype=np.int32))

        def table_vector(start_fn, offsets):
            start_fn(b, len(offsets))
            for off in reversed(offsets):
                b.PrependUOffsetTRelative(off)
            return b.EndVector()

        # Buffers: 0 is the conventional empty buffer.
        buffer_offsets, buffer_of = [], {}
        tflite.BufferStart(b)
        buffer_offsets.append(tflite.BufferEnd(b))
        for i, t in enumerate(self.tensors):
            if t.data is None:
                continue
            data = b.CreateNumpyVector(np.frombuffer(t.data, dtype=np.uint8))
            tflite.BufferStart(b)
            tflite.BufferAddData(b, data)
            buffer_offsets.append(tflite.BufferEnd(b))
            buffer_of[i] = len(buffer_offsets) - 1

        tensor_offsets = []
        for i, t in enumerate(self.tensors):
            name = b.CreateString(t.name)
            shape = int_vector(t.shape)
            tflite.TensorStart(b)
            tflite.TensorAddShape(b, shape)
            tflite.TensorAddType(b, {"float32": 0, "float16": 1, "int32": 2}[t.dtype])
            tflite.TensorAddBuffer(b, buffer_of.get(i, 0))
            tflite.TensorAddName(b, name)
            tensor_offsets.append(tflite.TensorEnd(b))

        opcodes = sorted({op.opcode for op in self.ops})
        op_offsets = []
        for op in self.ops:
            ins, outs = int_vector(op.inputs), int_vector(op.outputs)
            opts_type, opts = 0, None
            if op.options is not None:
                cls_name, values = op.options
                module = __import__(f"tflite.{cls_name}", fromlist=[cls_name])
                getattr(module, f"{cls_name}Start")(b)
                for key, value in values.items():
                    getattr(module, f"{cls_name}Add{key}")(b, value)
                opts = getattr(module, f"{cls_name}End")(b)
                opts_type = getattr(BuiltinOptions, cls_name)
            tflite.OperatorStart(b)
            tflite.OperatorAddOpcodeIndex(b, opcodes.index(op.opcode))
            tflite.OperatorAddInputs(b, ins)
            tflite.OperatorAddOutputs(b, outs)
            if opts is not None:
                tflite.OperatorAddBuiltinOptionsType(b, opts_type)
                tflite.OperatorAddBuiltinOptions(b, opts)
            op_offsets.append(tflite.OperatorEnd(b))

        tensors_vec = table_vector(tflite.SubGraphStartTensorsVector, tensor_offsets)
        ops_vec = table_vector(tflite.SubGraphStartOperatorsVector, op_offsets)
        inputs_vec, outputs_vec = int_vector(self.inputs), int_vector(self.outputs)
        sg_name = b.CreateString("main")
        tflite.SubGraphStart(b)
        tflite.SubGraphAddTensors(b, tensors_vec)
        tflite.SubGraphAddInputs(b, inputs_vec)
        tflite.SubGraphAddOutputs(b, outputs_vec)
        tflite.SubGraphAddOperators(b, ops_vec)
        tflite.SubGraphAddName(b, sg_name)
        subgraph = tflite.SubGraphEnd(b)

        code_offsets = []
        for name in opcodes:
            code = getattr(BuiltinOperator, name)
            tflite.OperatorCodeStart(b)
            tflite.OperatorCodeAddDeprecatedBuiltinCode(b, min(code, 127))
            tflite.OperatorCodeAddBuiltinCode(b, code)
            tflite.OperatorCodeAddVersion(b, 1)
            code_offsets.append(tflite.OperatorCodeEnd(b))

        codes_vec = table_vector(tflite.ModelStartOperatorCodesVector, code_offsets)
        subgraphs_vec = table_vector(tflite.ModelStartSubgraphsVector, [subgraph])
        buffers_vec = table_vector(tflite.ModelStartBuffersVector, buffer_offsets)
        desc = b.CreateString("built by tests.tflite_builder")
        tflite.ModelStart(b)
        tflite.ModelAddVersion(b, 3)
        tflite.ModelAddOperatorCodes(b, codes_vec)
        tflite.ModelAddSubgraphs(b, subgraphs_vec)
        tflite.ModelAddBuffers(b, buffers_vec)
        tflite.ModelAddDescription(b, desc)
        b.Finish(tflite.ModelEnd(b), file_identifier=b"TFL3")
        return bytes(b.Output())


_PADDING = {"SAME": 0, "VALID": 1}
_ACT = {"NONE": 0, "RELU": 1, "RELU6": 3}


def conv_add_relu_dense(path=None, seed: int = 0) -> bytes:
    """The ground-truth model of the tests: CONV_2D → ADD → RELU → RESHAPE → FULLY_CONNECTED.

    Operator indices: 0 CONV_2D, 1 ADD, 2 RELU, 3 RESHAPE, 4 FULLY_CONNECTED.
    """
    return _save(conv_add_relu_dense_graph(seed).build(), path)


def conv_add_relu_dense_graph(seed: int = 0) -> GraphBuilder:
    """The builder of ``conv_add_relu_dense`` before serialisation (to mutate it)."""
    g = GraphBuilder(seed=seed)
    x = g.input("input", [1, 8, 8, 3])
    y = g.conv2d(x, filters=4, kernel=3, name="conv")
    y = g.add(y, g.weights("add/bias", [4]), name="add")
    y = g.relu(y, name="relu")
    y = g.reshape(y, [1, 6 * 6 * 4], name="flatten")
    y = g.fully_connected(y, units=5, name="dense")
    g.output(y)
    return g


def chain(layers: int, path=None, seed: int = 0) -> bytes:
    """A synthetic model of ``layers`` operators (CONV/ADD/RELU blocks, then a dense head)."""
    g = GraphBuilder(seed=seed)
    y = g.input("input", [1, 8, 8, 4])
    body = max(layers - 3, 1)
    for i in range(body):
        kind = i % 3
        if kind == 0:
            y = g.conv2d(y, filters=4, kernel=3, name=f"block{i}/conv", padding="SAME")
        elif kind == 1:
            y = g.add(y, g.weights(f"block{i}/bias", [4]), name=f"block{i}/add")
        else:
            y = g.relu(y, name=f"block{i}/relu")
    y = g.reshape(y, [1, 8 * 8 * 4], name="flatten")
    y = g.fully_connected(y, units=10, name="head")
    y = g.softmax(y, name="probs")
    g.output(y)
    return _save(g.build(), path)


def constant_chain(path=None, ops: int = 40) -> bytes:
    """A model whose FoldConstant runs for seconds: ``ops`` ADD/MUL/SUB/MAXIMUM of constants in
    a chain, each folded by building and running a kernel of its own, in C++ that takes no
    Python signal until the pass returns (a long pass to interrupt)."""
    g = GraphBuilder()
    x = g.input("input", [1000])
    c = g.const("c0", np.linspace(0, 1, 1000, dtype=np.float32))
    for i in range(ops):
        d = g.const(f"d{i}", np.full(1000, 1.0 + i / 100, dtype=np.float32))
        c = g._op(["ADD", "MUL", "SUB", "MAXIMUM"][i % 4], [c, d], f"folded{i}", [1000])
    g.output(g.add(x, c, name="add"))
    return _save(g.build(), path)


def _save(data: bytes, path) -> bytes:
    if path is not None:
        with open(path, "wb") as fh:
            fh.write(data)
    return data

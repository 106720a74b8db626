"""The ONNX reference: onnxruntime run on the same inputs, keeping every node output.

onnxruntime returns only graph outputs, so the model is run as an in-memory copy whose
graph outputs are every node output of the main graph. Graph optimizations are off
(``ORT_DISABLE_ALL``): a fused onnxruntime kernel would compute several nodes at once, and
the reference should be the graph as written.
"""

from __future__ import annotations

import os

import numpy as np

from tvm_explorer.errors import ExplorerError
from tvm_explorer.frontends.reference_run import Quantization, ReferenceRun, engine_on

ORT_PIN = "onnxruntime==1.31.1"


def _ort():
    try:
        import onnxruntime
    except ImportError:
        raise ExplorerError(f"--numerics on an ONNX model needs onnxruntime: pip install {ORT_PIN}") from None
    return onnxruntime


def engine() -> str:
    """``onnxruntime 1.31.1``."""
    return f"onnxruntime {_ort().__version__}"


def _load(path: str):
    from tvm_explorer.frontends.onnx.loader import load_onnx

    return load_onnx(path).payload  # a ModelError (an ExplorerError) names the file


def _every_output(proto):
    import onnx

    copy = onnx.ModelProto()
    copy.CopyFrom(proto)
    have = {o.name for o in copy.graph.output}
    for node in copy.graph.node:
        for name in node.output:
            if name and name not in have:
                copy.graph.output.append(onnx.ValueInfoProto(name=name))
                have.add(name)
    return copy


def run_onnx(path: str | os.PathLike, inputs: dict[str, np.ndarray]) -> ReferenceRun:
    """Run ``path`` with onnxruntime on ``inputs`` (by graph input name); every node output."""
    path = os.fspath(path)
    ort = _ort()
    proto = _load(path)
    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    options.log_severity_level = 3  # warnings (unused initializers ...) are not ours to print
    try:
        session = ort.InferenceSession(
            _every_output(proto).SerializeToString(), options, providers=["CPUExecutionProvider"]
        )
    except Exception as err:  # noqa: BLE001 - onnxruntime's own exception types
        raise ExplorerError(f"{path}: onnxruntime cannot load the model ({' '.join(str(err).split())[:300]})") from None
    feed = {}
    for i in session.get_inputs():
        if i.name not in inputs:
            raise ExplorerError(f"{path}: input '{i.name}' has no value")
        feed[i.name] = inputs[i.name]
    names = [o.name for o in session.get_outputs()]
    try:
        values = session.run(names, feed)
    except Exception as err:  # noqa: BLE001
        raise ExplorerError(
            f"{path}: onnxruntime failed to run the model ({' '.join(str(err).split())[:300]})"
        ) from None
    tensors = {n: np.array(v, copy=True) for n, v in zip(names, values) if isinstance(v, np.ndarray)}
    return ReferenceRun(path, tensors, _quantization(proto))


def quantization_of(path: str | os.PathLike) -> dict[str, Quantization]:
    """The quantization of every ``QuantizeLinear`` output whose scale (and zero point) are
    initializers: the tensors of a QDQ model that hold quantized integers."""
    return _quantization(_load(os.fspath(path)))


def _quantization(proto) -> dict[str, Quantization]:
    from onnx import numpy_helper

    inits = {t.name: numpy_helper.to_array(t) for t in proto.graph.initializer}
    out = {}
    for node in proto.graph.node:
        if node.op_type != "QuantizeLinear" or len(node.input) < 2 or node.input[1] not in inits:
            continue
        scale = np.atleast_1d(inits[node.input[1]]).astype(np.float64)
        zp = (
            np.atleast_1d(inits[node.input[2]])
            if len(node.input) > 2 and node.input[2] in inits
            else np.zeros(scale.shape, np.int64)
        )
        axis = next((a.i for a in node.attribute if a.name == "axis"), 1)
        out[node.output[0]] = Quantization(scale, zp.astype(np.int64), int(axis))
    return out


def describe(path) -> str:
    """What ``--numerics`` compares an ONNX model with (``ReferenceEngine.describe``)."""
    return engine_on(engine(), path)

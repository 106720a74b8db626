"""The reference a compiled model is compared with: the model's own framework run on the
same inputs, keeping every intermediate tensor by name.

One backend per model kind, chosen by the file's suffix (``frontends.kind_of``):

- ``.tflite``: the LiteRT interpreter (``litert.py``);
- ``.onnx``: onnxruntime, every node output made a graph output (``onnx_runtime.py``);
- ``.pt2``: eager PyTorch, the program's graph run node by node (``eager.py``).

Every backend names tensors the way the model's loader names the layers' outputs, so a layer
output and its reference value meet by name. A ``--reference`` is another file of the same
kind and graph; ``check_same_graph`` names the first tensor it lacks or types differently.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field

import numpy as np

from ..errors import ExplorerError

KIND_NAMES = {"tflite": ".tflite", "onnx": ".onnx", "torch": ".pt2"}


@dataclass(frozen=True)
class Quantization:
    """A tensor's affine quantization (per tensor, or per channel along ``axis``)."""

    scales: np.ndarray
    zero_points: np.ndarray
    axis: int

    def dequantize(self, q: np.ndarray) -> np.ndarray:
        """Real values of the quantized ``q``."""
        scales, zps = self.scales.astype(np.float64), self.zero_points.astype(np.float64)
        if scales.size > 1 and q.ndim:
            shape = [1] * q.ndim
            shape[self.axis] = -1
            scales, zps = scales.reshape(shape), zps.reshape(shape)
        return (q.astype(np.float64) - zps) * scales


@dataclass
class ReferenceRun:
    """Tensors of one reference run, by name."""

    path: str
    tensors: dict[str, np.ndarray]
    quantization: dict[str, Quantization]
    # Quantized tensors: how many steps the reference's own two kernel sets differ by on
    # this input (LiteRT's optimized builtin kernels against its reference kernels).
    spread: dict[str, float] = field(default_factory=dict)


def _kind(path) -> str:
    from ..frontends import kind_of

    return kind_of(path)


def describe(path: str | os.PathLike) -> str:
    """``LiteRT interpreter on m.tflite`` / ``onnxruntime 1.31.1 on m.onnx`` / ``eager PyTorch
    2.13.0 on m.pt2``: what the report says it compared with."""
    name = os.path.basename(os.fspath(path))
    kind = _kind(path)
    if kind == "onnx":
        from .onnx_runtime import engine

        return f"{engine()} on {name}"
    if kind == "torch":
        from .eager import engine

        return f"{engine()} on {name}"
    return f"LiteRT interpreter on {name}"


def check_same_graph(model, reference_path: str) -> None:
    """Raise ExplorerError naming the first tensor (a main-graph input or a layer output of
    ``model``) that the reference lacks or shapes/types differently."""
    kind = getattr(model, "kind", "tflite")
    if _kind(reference_path) != kind:
        raise ExplorerError(f"{reference_path}: the reference must be a {KIND_NAMES[kind]} model "
                            f"like {model.path} (the same graph)")
    if kind == "tflite":
        from .litert import check_same_graph as check_litert

        return check_litert(model, reference_path)
    from ..errors import ModelError
    from ..frontends import load_any
    from ..frontends.torch.safe_load import PickleRefused

    try:
        ref = load_any(reference_path)
    except PickleRefused:
        raise  # names the file already; the CLI's exit code tells a front end to ask
    except ModelError as err:
        raise ExplorerError(f"reference: {err}") from None
    by_name = {t.name: (t, None) for t in ref.subgraphs[0].inputs}
    by_name.update({t.name: (t, lay) for lay in ref.layers for t in lay.outputs})
    wanted = [(t, "input", None) for t in model.subgraphs[0].inputs]
    wanted += [(t, f"output of {lay.label}{f' {lay.name!r}' if lay.name else ''}", lay)
               for lay in model.layers if lay.subgraph == 0 for t in lay.outputs]
    for t, role, lay in wanted:
        r, producer = by_name.get(t.name, (None, None))
        if r is None:
            raise ExplorerError(f"{reference_path}: no tensor named '{t.name}' ({role} in "
                                f"{model.path}); --reference must be the same graph")
        if lay is not None and producer is not None and producer.opcode != lay.opcode:
            raise ExplorerError(f"{reference_path}: tensor '{t.name}' ({role} in {model.path}) is "
                                f"made by {producer.label}; --reference must be the same graph")
        if list(r.shape) != list(t.shape):
            raise ExplorerError(f"{reference_path}: tensor '{t.name}' ({role}) has shape {list(r.shape)}, "
                                f"{list(t.shape)} in {model.path}; --reference must be the same graph")
        if r.dtype != t.dtype:
            raise ExplorerError(f"{reference_path}: tensor '{t.name}' ({role}) has dtype {r.dtype}, "
                                f"{t.dtype} in {model.path}; --reference must be the same graph")


def run_reference(path: str | os.PathLike, inputs: dict[str, np.ndarray]) -> ReferenceRun:
    """Run the reference model at ``path`` on ``inputs`` (by input name), keeping every tensor."""
    kind = _kind(path)
    if kind == "onnx":
        from .onnx_runtime import run_onnx

        return run_onnx(path, inputs)
    if kind == "torch":
        from .eager import run_eager

        return run_eager(path, inputs)
    from .litert import run_reference as run_litert

    return run_litert(path, inputs)


def quantization_of(path: str | os.PathLike) -> dict[str, Quantization]:
    """Every quantized tensor's parameters in the model at ``path`` (nothing is run)."""
    kind = _kind(path)
    if kind == "onnx":
        from .onnx_runtime import quantization_of as onnx_quantization

        return onnx_quantization(path)
    if kind == "torch":
        return {}  # a float program: no quantized tensors we can name
    from .litert import quantization_of as litert_quantization

    return litert_quantization(path)

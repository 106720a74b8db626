"""What a reference engine (the model's own framework: LiteRT, onnxruntime, eager PyTorch)
hands back: every tensor of one run by name, and the quantization of the quantized ones.

Every engine names tensors the way the model's loader names the layers' outputs, so a layer
output and its reference value meet by name.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field

import numpy as np

from tvm_explorer.errors import ExplorerError, ModelError
from tvm_explorer.frontends.model import Layer, TensorInfo


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


@dataclass(frozen=True)
class Spread:
    """How far the reference's own engines are apart on one tensor, for one input: the
    largest difference of any other engine from the reference run, in quantization steps
    (``steps``, integer quantized tensors only) and in real values (``max_abs``), and the
    lowest cosine similarity of any of them to it (real values)."""

    steps: float | None
    max_abs: float
    cosine: float


@dataclass
class ReferenceRun:
    """Tensors of one reference run, by name."""

    path: str
    tensors: dict[str, np.ndarray]
    quantization: dict[str, Quantization]
    # Per tensor: how far the reference's other engines land from this run on this input
    # (LiteRT: its reference kernels and its XNNPACK delegate against its builtin kernels);
    # empty where the model kind has one engine only.
    spread: dict[str, Spread] = field(default_factory=dict)
    spread_engines: str | None = None  # what was run to measure it, for the report


def cosine(a: np.ndarray, b: np.ndarray) -> float:
    """Cosine similarity of two tensors as vectors (1.0 when both are all zero)."""
    a, b = a.ravel(), b.ravel()
    na, nb = float(np.linalg.norm(a)), float(np.linalg.norm(b))
    if na == 0.0 and nb == 0.0:
        return 1.0
    if na == 0.0 or nb == 0.0:
        return 0.0
    return float(np.clip(np.dot(a, b) / (na * nb), -1.0, 1.0))


def measure_spread(
    base: dict[str, np.ndarray], others: list[dict[str, np.ndarray]], quant: dict[str, Quantization]
) -> dict[str, Spread]:
    """Per tensor of ``base`` (the reference run) that some other engine's run also has with
    the same shape and finite values: how far those runs are from it (``Spread``)."""
    out = {}
    for name, ref in base.items():
        seen = [o[name] for o in others if name in o and o[name].shape == ref.shape]
        if not seen or not (np.issubdtype(ref.dtype, np.number) or ref.dtype == np.bool_):
            continue
        q = quant.get(name) if np.issubdtype(ref.dtype, np.integer) else None
        real = q.dequantize(ref) if q is not None else ref.astype(np.float64)
        if not np.all(np.isfinite(real)):
            continue
        steps = 0.0 if q is not None else None
        max_abs, cos = 0.0, 1.0
        for other in seen:
            if q is not None:
                steps = max(
                    steps or 0.0, float(np.max(np.abs(other.astype(np.int64) - ref.astype(np.int64)), initial=0))
                )
            o = q.dequantize(other) if q is not None else other.astype(np.float64)
            if not np.all(np.isfinite(o)):
                continue
            max_abs = max(max_abs, float(np.max(np.abs(o - real), initial=0.0)))
            cos = min(cos, cosine(o, real))
        out[name] = Spread(steps, max_abs, cos)
    return out


def check_same_graph_by_loading(model, reference_path: str) -> None:
    """Raise ExplorerError naming the first tensor (a main-graph input or a layer output of
    ``model``) that the reference model, loaded with ``model``'s frontend, lacks or
    shapes/types differently."""
    from tvm_explorer.frontends import load_any
    from tvm_explorer.frontends.torch.safe_load import PickleRefused

    try:
        ref = load_any(reference_path)
    except PickleRefused:
        raise  # names the file already; the CLI's exit code tells a front end to ask
    except ModelError as err:
        raise ExplorerError(f"reference: {err}") from None
    by_name: dict[str, tuple[TensorInfo, Layer | None]] = {t.name: (t, None) for t in ref.subgraphs[0].inputs}
    by_name.update({t.name: (t, lay) for lay in ref.layers for t in lay.outputs})
    wanted = [(t, "input", None) for t in model.subgraphs[0].inputs]
    wanted += [
        (t, f"output of {lay.label}{f' {lay.name!r}' if lay.name else ''}", lay)
        for lay in model.layers
        if lay.subgraph == 0
        for t in lay.outputs
    ]
    for t, role, lay in wanted:
        r, producer = by_name.get(t.name, (None, None))
        if r is None:
            raise ExplorerError(
                f"{reference_path}: no tensor named '{t.name}' ({role} in "
                f"{model.path}); --reference must be the same graph"
            )
        if lay is not None and producer is not None and producer.opcode != lay.opcode:
            raise ExplorerError(
                f"{reference_path}: tensor '{t.name}' ({role} in {model.path}) is "
                f"made by {producer.label}; --reference must be the same graph"
            )
        if list(r.shape) != list(t.shape):
            raise ExplorerError(
                f"{reference_path}: tensor '{t.name}' ({role}) has shape {list(r.shape)}, "
                f"{list(t.shape)} in {model.path}; --reference must be the same graph"
            )
        if r.dtype != t.dtype:
            raise ExplorerError(
                f"{reference_path}: tensor '{t.name}' ({role}) has dtype {r.dtype}, "
                f"{t.dtype} in {model.path}; --reference must be the same graph"
            )


def engine_on(engine: str, path) -> str:
    """``LiteRT interpreter on m.tflite``: what a report says it compared with."""
    return f"{engine} on {os.path.basename(os.fspath(path))}"

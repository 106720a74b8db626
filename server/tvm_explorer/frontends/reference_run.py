"""What a reference engine (the model's own framework: LiteRT, onnxruntime, eager PyTorch)
hands back: every tensor of one run by name, and the quantization of the quantized ones.

Every engine names tensors the way the model's loader names the layers' outputs, so a layer
output and its reference value meet by name.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from tvm_explorer.errors import ExplorerError, ModelError


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
    by_name = {t.name: (t, None) for t in ref.subgraphs[0].inputs}
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

"""Error measures between a compiled layer output and the reference's, and when they count
as a divergence (docs/numerics.md).

- ``max_abs``: largest absolute difference (of real values: quantized tensors are
  dequantized with their scale and zero point first).
- ``max_rel``: ``max_abs`` divided by the reference tensor's largest magnitude (elementwise
  relative errors explode at zeros, which every ReLU output is full of).
- ``cosine``: cosine similarity of the two tensors as vectors (1.0 when both are all zero).
- ``steps``: quantized tensors only: the largest difference in quantization steps, i.e.
  between the stored integers.

A float (or dequantized-output) tensor diverges when ``max_abs > FLOAT_REL_TOLERANCE ×
max|reference|`` (with ``max|reference|`` at least ``FLOAT_ABS_FLOOR``, so an all-zero
reference still tolerates round-off) or ``cosine < COSINE_MIN``; a quantized tensor when
``steps`` exceeds its budget, ``MAX_STEPS + SPREAD_FACTOR × spread``: one step of rounding,
plus room in proportion to how far the reference's own two kernel sets are apart on this
tensor and input (``litert.py``) — a third faithful engine (TVM requantizes in float, LiteRT
in fixed point) lands up to about three times that far from either; any other integer or
bool tensor when any element differs.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from tvm_explorer.numerics.reference import Quantization

FLOAT_REL_TOLERANCE = 1e-3
FLOAT_ABS_FLOOR = 1e-6
COSINE_MIN = 0.9999
MAX_STEPS = 1.0
SPREAD_FACTOR = 4.0


@dataclass(frozen=True)
class Error:
    """How far one tensor is from its reference."""

    max_abs: float
    max_rel: float
    cosine: float
    steps: float | None
    diverges: bool
    note: str | None = None
    budget: float | None = None  # quantized: the steps allowed (MAX_STEPS or the spread)


def _cosine(a: np.ndarray, b: np.ndarray) -> float:
    na, nb = float(np.linalg.norm(a)), float(np.linalg.norm(b))
    if na == 0.0 and nb == 0.0:
        return 1.0
    if na == 0.0 or nb == 0.0:
        return 0.0
    return float(np.clip(np.dot(a, b) / (na * nb), -1.0, 1.0))


def compare(
    value: np.ndarray,
    reference: np.ndarray,
    quant: Quantization | None = None,
    ref_quant: Quantization | None = None,
    spread: float | None = None,
) -> Error:
    """The error of ``value`` against ``reference`` (same tensor, same graph); ``spread``:
    the steps the reference's own engines differ by on this tensor."""
    if value.size != reference.size:
        return Error(
            math.inf,
            math.inf,
            0.0,
            None,
            True,
            f"shape {list(value.shape)} where the reference has {list(reference.shape)}",
        )
    value = value.reshape(reference.shape)
    quantized = quant is not None and np.issubdtype(reference.dtype, np.integer)
    if quantized:
        ref_quant = ref_quant or quant
        steps = float(np.max(np.abs(value.astype(np.int64) - reference.astype(np.int64)), initial=0))
        if ref_quant is not quant and not _same(quant, ref_quant):
            steps = None  # different scales: steps are not comparable, real values are
        a, r = quant.dequantize(value), ref_quant.dequantize(reference)
    else:
        steps = None
        a, r = value.astype(np.float64), reference.astype(np.float64)
    note = None
    if not (np.all(np.isfinite(a)) and np.all(np.isfinite(r))):
        # Non-finite values in the same places with the same values (an attention mask's
        # -inf) agree; the error is that of the finite rest.
        odd = ~(np.isfinite(a) & np.isfinite(r))
        if not np.array_equal(a[odd], r[odd], equal_nan=True):
            return Error(math.inf, math.inf, 0.0, steps, True, "non-finite values")
        note = f"{int(odd.sum())} non-finite value(s) (inf/nan) equal in both"
        a, r = np.where(odd, 0.0, a), np.where(odd, 0.0, r)
    diff = np.abs(a - r).ravel()
    max_abs = float(diff.max(initial=0.0))
    magnitude = float(np.abs(r).max(initial=0.0))
    max_rel = max_abs / magnitude if magnitude > 0 else (0.0 if max_abs == 0 else math.inf)
    cosine = _cosine(a.ravel(), r.ravel())
    budget = None
    if quantized and steps is not None:
        budget = MAX_STEPS + SPREAD_FACTOR * (spread or 0.0)
        diverges = steps > budget
    elif np.issubdtype(reference.dtype, np.floating) or quantized:
        diverges = max_abs > FLOAT_REL_TOLERANCE * max(magnitude, FLOAT_ABS_FLOOR) or cosine < COSINE_MIN
    else:
        diverges = max_abs > 0
    return Error(max_abs, max_rel, cosine, steps, bool(diverges), note, budget=budget)


def _same(a: Quantization, b: Quantization) -> bool:
    return (
        a.scales.shape == b.scales.shape
        and np.allclose(a.scales, b.scales)
        and np.array_equal(a.zero_points, b.zero_points)
    )


def worst(errors: list[Error]) -> Error:
    """One error for a layer with several outputs: the worst of each measure."""
    if len(errors) == 1:
        return errors[0]
    steps = [e.steps for e in errors if e.steps is not None]
    budgets = [e.budget for e in errors if e.budget is not None]
    return Error(
        max(e.max_abs for e in errors),
        max(e.max_rel for e in errors),
        min(e.cosine for e in errors),
        max(steps) if steps else None,
        any(e.diverges for e in errors),
        next((e.note for e in errors if e.note), None),
        max(budgets) if budgets else None,
    )

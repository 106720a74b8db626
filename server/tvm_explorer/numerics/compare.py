"""Error measures between a compiled layer output and the reference's, the budget each is
allowed, and when they count as a divergence (docs/numerics.md).

- ``max_abs``: largest absolute difference (of real values: quantized tensors are
  dequantized with their scale and zero point first).
- ``max_rel``: ``max_abs`` divided by the reference tensor's largest magnitude (elementwise
  relative errors explode at zeros, which every ReLU output is full of).
- ``cosine``: cosine similarity of the two tensors as vectors (1.0 when both are all zero).
- ``steps``: quantized tensors only: the largest difference in quantization steps, i.e.
  between the stored integers.

The budgets come from the reference's own *spread* where it has one (``Spread``: how far its
other engines land from it on this tensor and input; LiteRT's three int8 paths):

- quantized tensor: ``steps ≤ MAX_STEPS + SPREAD_FACTOR × spread.steps``, a budget that must
  stay reachable: at most ``STEP_CAP`` of the type's range (64 steps of an int8 tensor's
  255). Where the spread would need more, steps cannot tell a fault from the engines' own
  disagreement and are not judged (the cosine still is);
- every tensor compared as real values: ``cosine ≥ 1 − max(1 − COSINE_MIN, SPREAD_FACTOR ×
  (1 − spread.cosine))``, judged only while that floor is at least ``COSINE_FLOOR``;
- float (or dequantized with other scales): ``max_abs ≤ max(FLOAT_REL_TOLERANCE ×
  max|reference|, SPREAD_FACTOR × spread.max_abs)`` (``max|reference|`` at least
  ``FLOAT_ABS_FLOOR``), judged while that is at most ``ABS_CAP`` × ``max|reference|``;
- any other integer or bool tensor: exact.

A layer none of whose measures can be judged is *not judged* (never "matches"). ``ratio`` is
the worst judged measure over its budget (1 = at the budget), what the graph colors by.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from tvm_explorer.bundle.sections.numerics import FLOAT_REL_TOLERANCE
from tvm_explorer.frontends.reference_run import Spread, cosine
from tvm_explorer.numerics.reference import Quantization

FLOAT_ABS_FLOOR = 1e-6
COSINE_MIN = 0.9999
MAX_STEPS = 1.0
# TVM requantizes in float as XNNPACK does: on three int8 MobileNets it lands within 1.21 ×
# the spread of LiteRT's engines in steps and 1.08 × in cosine deficit.
SPREAD_FACTOR = 1.5
STEP_CAP = 0.25  # of the type's range: 64 steps of int8, 16384 of int16
COSINE_FLOOR = 0.8
ABS_CAP = 0.5


@dataclass(frozen=True)
class Error:
    """How far one tensor is from its reference, and what it was allowed."""

    max_abs: float
    max_rel: float
    cosine: float
    steps: float | None
    diverges: bool
    note: str | None = None
    budget: float | None = None  # quantized: the steps allowed (null: steps not judged)
    spread: Spread | None = None  # the reference's own, on this tensor
    cosine_min: float | None = None  # the lowest cosine allowed (null: not judged)
    abs_budget: float | None = None  # float: the max abs error allowed (null: not judged)
    ratio: float | None = None  # the worst judged measure over its budget
    judged: bool = True


def mismatch(note: str, spread: Spread | None = None, ratio: float | None = None) -> Error:
    """The error of something that cannot be compared with its reference (another shape,
    another number of outputs): infinitely far, diverging; ``note`` says why."""
    return Error(math.inf, math.inf, 0.0, None, True, note, spread=spread, ratio=ratio)


def _step_cap(dtype: np.dtype) -> float:
    info = np.iinfo(dtype)
    return STEP_CAP * float(int(info.max) - int(info.min))


def _cosine_min(spread: Spread | None, rounding: float = 0.0) -> float | None:
    deficit = max(1.0 - COSINE_MIN, rounding)
    if spread is not None:
        deficit = max(deficit, SPREAD_FACTOR * (1.0 - spread.cosine))
    return 1.0 - deficit if 1.0 - deficit >= COSINE_FLOOR else None


def _over(error: float, budget: float) -> float:
    return error / budget if budget > 0 else (0.0 if error == 0 else math.inf)


def compare(
    value: np.ndarray,
    reference: np.ndarray,
    quant: Quantization | None = None,
    ref_quant: Quantization | None = None,
    spread: Spread | None = None,
) -> Error:
    """The error of ``value`` against ``reference`` (same tensor, same graph); ``spread``:
    how far the reference's own engines are apart on this tensor."""
    if value.size != reference.size:
        return mismatch(f"shape {list(value.shape)} where the reference has {list(reference.shape)}", spread, math.inf)
    value = value.reshape(reference.shape)
    quantized = quant is not None and np.issubdtype(reference.dtype, np.integer)
    steps: float | None
    if quantized:
        assert quant is not None  # quantized says so
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
            return Error(math.inf, math.inf, 0.0, steps, True, "non-finite values", spread=spread, ratio=math.inf)
        note = f"{int(odd.sum())} non-finite value(s) (inf/nan) equal in both"
        a, r = np.where(odd, 0.0, a), np.where(odd, 0.0, r)
    diff = np.abs(a - r).ravel()
    max_abs = float(diff.max(initial=0.0))
    magnitude = float(np.abs(r).max(initial=0.0))
    max_rel = max_abs / magnitude if magnitude > 0 else (0.0 if max_abs == 0 else math.inf)
    cos = cosine(a, r)
    if not (quantized or np.issubdtype(reference.dtype, np.floating)):  # plain integers, bools
        diverges = max_abs > 0
        return Error(max_abs, max_rel, cos, steps, diverges, note, spread=spread, ratio=math.inf if diverges else 0.0)
    ratios: list[float] = []
    budget = abs_budget = None
    rounding = 0.0
    if quantized:
        assert ref_quant is not None  # set above
        # The cosine deficit MAX_STEPS of rounding everywhere could cause at most: with |e| ≤
        # one step per element, 1 − cos = sin²/(1 + cos) ≤ Σ step² / ((1 + COSINE_FLOOR) Σ r²)
        # wherever the cosine is judged (a tensor of a few steps' magnitude, such as a flat
        # softmax, has a large one).
        unit = ref_quant.dequantize(reference.astype(np.int64) + 1) - r
        power = float(np.sum(r * r))
        rounding = MAX_STEPS**2 * float(np.sum(unit * unit)) / ((1.0 + COSINE_FLOOR) * power) if power > 0 else math.inf
    if quantized and steps is not None:
        wanted = MAX_STEPS + SPREAD_FACTOR * ((spread.steps or 0.0) if spread is not None else 0.0)
        if wanted <= _step_cap(reference.dtype):
            budget = wanted
            ratios.append(_over(steps, budget))
    else:
        scale = max(magnitude, FLOAT_ABS_FLOOR)
        wanted = max(FLOAT_REL_TOLERANCE * scale, SPREAD_FACTOR * spread.max_abs if spread is not None else 0.0)
        if wanted <= ABS_CAP * scale:
            abs_budget = wanted
            ratios.append(_over(max_abs, abs_budget))
    cosine_min = _cosine_min(spread, rounding)
    if cosine_min is not None:
        ratios.append(_over(1.0 - cos, 1.0 - cosine_min))
    judged = bool(ratios)
    ratio = max(ratios) if ratios else None
    if not judged:
        what = f"{spread.steps:g} steps, " if spread is not None and spread.steps is not None else ""
        note = note or (
            f"the reference's own engines are too far apart here ({what}cosine "
            f"{spread.cosine:.4f}) for any budget to tell a fault from their disagreement"
            if spread is not None
            else "not judged"
        )
    return Error(
        max_abs,
        max_rel,
        cos,
        steps,
        bool(ratio is not None and ratio > 1.0),
        note,
        budget=budget,
        spread=spread,
        cosine_min=cosine_min,
        abs_budget=abs_budget,
        ratio=ratio,
        judged=judged,
    )


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
    ratios = [e.ratio for e in errors if e.ratio is not None]
    mins = [e.cosine_min for e in errors if e.cosine_min is not None]
    abs_budgets = [e.abs_budget for e in errors if e.abs_budget is not None]
    worst_spread = max((e for e in errors if e.spread is not None), key=lambda e: e.ratio or 0.0, default=None)
    return Error(
        max(e.max_abs for e in errors),
        max(e.max_rel for e in errors),
        min(e.cosine for e in errors),
        max(steps) if steps else None,
        any(e.diverges for e in errors),
        next((e.note for e in errors if e.note), None),
        max(budgets) if budgets else None,
        worst_spread.spread if worst_spread is not None else None,
        min(mins) if mins else None,
        max(abs_budgets) if abs_budgets else None,
        max(ratios) if ratios else None,
        any(e.judged for e in errors),
    )

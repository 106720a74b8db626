"""Assemble ``memory.json`` (``bundle/sections/memory.py`` is its schema): the timeline, the
measured runs beside what the allocators should have held, and the reference's arena."""

from __future__ import annotations

from tvm_explorer.bundle.sections.memory import SCHEMA_VERSION, TOLERANCE_BYTES, TOLERANCE_SHARE

HERE = "this machine"  # ``measured.where`` of a run in the compile's own process tree


def within(measured: int | None, predicted: int | None) -> bool | None:
    """Whether a measured figure is the predicted one within the stated tolerance."""
    if measured is None or predicted is None:
        return None
    return abs(measured - predicted) <= TOLERANCE_SHARE * predicted + TOLERANCE_BYTES


def _kernel_samples(steps: list[dict], calls: list) -> list[int | None]:
    """The bytes measured after each step's call: kernel steps are matched in order to the
    measured calls of the same kernel (the runtime's own calls in between are skipped)."""
    out: list[int | None] = []
    i = 0
    for step in steps:
        got = None
        if step["kind"] == "kernel":
            j = i
            while j < len(calls) and calls[j][0] != step["callee"]:
                j += 1
            if j < len(calls):
                got, i = calls[j][1], j + 1
        out.append(got)
    return out


def measured_section(allocations: dict | None, why_not: str | None, timeline: dict) -> dict:
    """``measured``: what the two cold runs allocated, beside the replayed allocators."""
    if allocations is None:
        if why_not is None:
            return {"status": "not_requested", "reason": "compiled without --profile"}
        return {"status": "unavailable", "reason": why_not}
    if allocations.get("status") != "measured":
        return {"status": allocations.get("status", "failed"), "reason": allocations.get("reason") or "not measured"}
    predicted = timeline["predicted"]
    naive, pooled = allocations["naive"], allocations["pooled"]
    return {
        "status": "measured",
        "reason": None,
        "method": allocations.get("method"),
        "where": allocations.get("where") or HERE,
        "naive_peak_bytes": naive["peak_bytes"],
        "pooled_bytes": pooled["peak_bytes"],
        "naive_within": within(naive["peak_bytes"], predicted["naive_peak_bytes"]),
        "pooled_within": within(pooled["peak_bytes"], predicted["pooled_bytes"]),
        "steps": _kernel_samples(timeline["steps"], naive["calls"]),
        "truncated": bool(naive.get("truncated")),
    }


def build(
    plan,
    timeline: dict,
    *,
    target: str,
    analysed: dict,
    symbols: list[dict],
    measured: dict,
    reference: dict | None,
    analysis_ms: float,
) -> dict:
    """The ``memory.json`` document."""
    return {
        "schema_version": SCHEMA_VERSION,
        "function": plan.function,
        "target": target,
        "analysed": analysed,
        "analysis_ms": round(analysis_ms, 2),
        "symbols": symbols,
        "inputs": [{"name": r.name, "shape": r.shape, "dtype": r.dtype, "bytes": r.bytes} for r in plan.inputs],
        "constants": {
            "count": len(plan.constants),
            "bytes": sum(c.bytes or 0 for c in plan.constants),
        },
        **timeline,
        "measured": measured,
        "reference": reference,
        "tolerance": {"share": TOLERANCE_SHARE, "bytes": TOLERANCE_BYTES},
        "notes": list(plan.notes),
    }

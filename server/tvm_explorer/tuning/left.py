"""Time left on the table: per kernel of a ``--tune`` bundle, the time per inference that
more tuning could still win, from what was measured, and the layers ranked by it
(docs/tuning.md, "Time left on the table"). TVM-free: it reads ``tuning.json`` and
``costs.json``.

The rule, per kernel (``calls``: how often the model calls it, from ``costs.json``):

- ``untuned``, ``miss``, ``build_failed``: it runs TVM's default schedule; its whole measured
  default time × calls is at stake — the most tuning could win, not a prediction of it;
- ``tuned``, measured slower than the default schedule side by side: (tuned − default) × calls,
  which the default schedule is measured to win back now;
- ``tuned`` otherwise: 0 measured — MetaSchedule applied the best candidate its database holds
  (``MetaScheduleApplyDatabase`` takes the top record); more trials may find a faster one, but
  nothing measured says by how much;
- no time measured (timing failed): unknown, ranked last.

Weighted by the kernel's share of the model's time: measured by the profile (``costs.json``'s
kernel ``share``) when the bundle was compiled with ``--profile``, else the ledger's own times
(each kernel's time as built × calls over their sum), so that the ranking says what fraction of
the whole model is on the table.
"""

from __future__ import annotations

from typing import TypedDict

from tvm_explorer.bundle.sections.costs import CostsDocument
from tvm_explorer.bundle.sections.tuning import TunedKernel, TuningDocument, state_word

UPPER_BOUND = "untuned: its whole default time is at stake (the most tuning could win)"
DEFAULT_FASTER = "tuned but measured slower than TVM's default schedule: the default wins this back"
BEST_APPLIED = "tuned: the database's best candidate is applied; more trials may win more, not measured"
NOT_MEASURED = "not measured (its timing failed)"


class KernelLeft(TypedDict):
    kernel: str
    layers: list[int]
    state: str
    state_word: str  # as the ledger shows it (``run failed``: built, refused by the device)
    calls: int
    now_us: float | None  # per inference, as built: tuned time if tuned, else default
    left_us: float | None  # per inference
    share: float | None  # of the model's time
    left_share: float | None  # of the model's time: left_us / now_us × share
    why: str


class TimeLeft(TypedDict):
    share_from: str  # "profile" | "ledger"
    total_left_us: float
    total_left_share: float | None
    kernels: list[KernelLeft]  # ranked: most left first, unknown last
    layers: list[dict]  # {"layer": id, "left_us", "left_share", "kernels"} ranked the same way


def _left(k: TunedKernel, calls: int) -> tuple[float | None, float | None, str]:
    default, tuned = k["default_us"], k["tuned_us"]
    if k["state"] != "tuned":
        if default is None:
            return None, None, NOT_MEASURED
        return default * calls, default * calls, UPPER_BOUND
    if tuned is None or default is None:
        return (tuned * calls if tuned is not None else None), None, NOT_MEASURED
    if tuned > default:
        return tuned * calls, (tuned - default) * calls, DEFAULT_FASTER
    return tuned * calls, 0.0, BEST_APPLIED


def _profiled(costs: CostsDocument | None) -> dict[str, float] | None:
    if costs is None or costs["profile"].get("status") != "measured":
        return None
    shares = {k["name"]: k.get("share") for k in costs["kernels"]}
    return {name: float(s) for name, s in shares.items() if isinstance(s, (int, float))}


def time_left(doc: TuningDocument, costs: CostsDocument | None) -> TimeLeft:
    """Each kernel's time left on the table, and the layers, most first (module docstring)."""
    calls_of = {k["name"]: k["calls"] for k in costs["kernels"]} if costs is not None else {}
    profiled = _profiled(costs)
    rows: list[KernelLeft] = []
    for k in doc["kernels"]:
        calls = max(1, int(calls_of.get(k["kernel"], 1)))
        now, left, why = _left(k, calls)
        if why == NOT_MEASURED and doc.get("times_not_measured"):
            why = f"not measured: {doc.get('times_not_measured')}"
        rows.append(
            {
                "kernel": k["kernel"],
                "layers": list(k["layers"]),
                "state": k["state"],
                "state_word": state_word(k),
                "calls": calls,
                "now_us": _r(now),
                "left_us": _r(left),
                "share": None,
                "left_share": None,
                "why": why,
            }
        )
    total_now = sum(r["now_us"] or 0.0 for r in rows)
    for r in rows:
        if profiled is not None:
            r["share"] = profiled.get(r["kernel"])
        elif r["now_us"] is not None and total_now > 0:
            r["share"] = r["now_us"] / total_now
        if r["share"] is not None and r["left_us"] is not None and r["now_us"]:
            r["left_share"] = _r(r["left_us"] / r["now_us"] * r["share"], 6)
        r["share"] = _r(r["share"], 6)
    rows.sort(key=_rank)
    known = [r for r in rows if r["left_us"] is not None]
    shares = [r["left_share"] for r in known if r["left_share"] is not None]
    return {
        "share_from": "profile" if profiled is not None else "ledger",
        "total_left_us": round(sum(r["left_us"] or 0.0 for r in known), 4),
        "total_left_share": round(sum(shares), 6) if shares else None,
        "kernels": rows,
        "layers": _layers(rows),
    }


def _rank(row: KernelLeft) -> tuple:
    unknown = row["left_us"] is None
    return (unknown, -(row["left_share"] or 0.0), -(row["left_us"] or 0.0), row["kernel"])


def _layers(rows: list[KernelLeft]) -> list[dict]:
    """Per layer, the time left in the kernels computing it (a kernel fused over several layers
    counts whole for each: it is one piece of code, tuned or not as one)."""
    by_layer: dict[int, dict] = {}
    for r in rows:
        for lid in r["layers"]:
            entry = by_layer.setdefault(lid, {"layer": lid, "left_us": None, "left_share": None, "kernels": []})
            entry["kernels"].append(r["kernel"])
            for key in ("left_us", "left_share"):
                value = r[key]
                if value is not None:
                    entry[key] = _r((entry[key] or 0.0) + value, 6)
    return sorted(
        by_layer.values(),
        key=lambda e: (e["left_us"] is None, -(e["left_share"] or 0.0), -(e["left_us"] or 0.0), e["layer"]),
    )


def _r(value: float | None, digits: int = 4) -> float | None:
    return None if value is None else round(float(value), digits)

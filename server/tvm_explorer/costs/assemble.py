"""Assemble ``costs.json`` (``bundle/sections/costs.py`` is its schema) from what a compile
measured: static costs per kernel, each kernel's work per layer, FLOPs, pass times and, with
``--profile``, the measured kernel calls."""

from __future__ import annotations

import statistics
from dataclasses import dataclass
from typing import Any, TypedDict

from tvm_explorer.bundle.sections.costs import PROFILE_NUMBERS, SCHEMA_VERSION, SPLIT_RULE
from tvm_explorer.costs.profile import WARMUP, Measured
from tvm_explorer.costs.static import StaticCosts


@dataclass
class ProfileStatus:
    """Whether run time was measured, and if not, why (one sentence)."""

    status: str  # "measured" | "not_requested" | "unavailable" | "failed"
    reason: str | None = None
    repeat: int = 0
    inputs: str | None = None
    device: str = "cpu"
    device_name: str | None = None  # the GPU's name and architecture, when one ran the model
    remote: dict | None = None  # where on remote devices it ran (``profile.remote``)


class _LayerRow(TypedDict):
    """What the kernels and measured calls add up to for one layer."""

    kernels: list[str]
    flops: float
    has_flops: bool
    time: float
    runs: list[float]


def _split(kernel_work: dict[int, float], members: list[int]) -> dict[int, float]:
    """Fractions of one call of a kernel per layer it serves (by work; evenly without)."""
    if not members:
        return {}
    weights = {lid: kernel_work.get(lid, 0.0) for lid in members}
    total = sum(weights.values())
    if total <= 0:
        return {lid: 1.0 / len(members) for lid in members}
    return {lid: w / total for lid, w in weights.items()}


def _r(value: float | None, digits: int = 4) -> float | None:
    return None if value is None else round(float(value), digits)


def build(
    layers: list[dict],
    static: StaticCosts,
    origin_sets: list,
    work: dict[str, dict[int, float]],
    flops: dict[str, float],
    passes: list[dict],
    target: str,
    status: ProfileStatus,
    measured: Measured | None,
) -> dict:
    """The ``costs.json`` document. ``layers``: ``{"id", "subgraph", "op_index", "opcode",
    "name"}`` per layer; ``passes``: ``{"index", "stage", "name", "ms", "changed_functions"}``."""

    def members(sid: int) -> list[int]:
        return [lid for lid, _ in origin_sets[sid]] if 0 <= sid < len(origin_sets) else []

    kernels = static.kernels
    site_splits: dict[str, list[dict[int, float]]] = {}
    kernel_layers: dict[str, list[int]] = {}
    for name, k in kernels.items():
        sets = k.sites or ([k.function_set] if k.function_set else [])
        splits = [_split(work.get(name, {}), members(sid)) for sid in sets]
        site_splits[name] = splits
        seen: list[int] = []
        for split in splits:
            seen.extend(lid for lid in sorted(split) if lid not in seen)
        kernel_layers[name] = seen

    per_layer: dict[int, _LayerRow] = {
        lay["id"]: {"kernels": [], "flops": 0.0, "has_flops": False, "time": 0.0, "runs": []} for lay in layers
    }
    for name in kernels:
        for split in site_splits[name]:
            for lid, frac in split.items():
                row = per_layer.get(lid)
                if row is None:
                    continue
                if name not in row["kernels"]:
                    row["kernels"].append(name)
                if name in flops:
                    row["flops"] += flops[name] * frac
                    row["has_flops"] = True

    calls: list[dict[str, Any]] = []
    total_ms: float | None = None
    runtime_ms: float | None = None
    plain: list[float] | None = None
    kernel_time: dict[str, float] = {}
    if measured is not None and measured.times:
        total_ms = statistics.median(sum(run) for run in measured.times)
        plain = measured.plain_ms
        seen_count: dict[str, int] = {}
        runtime_ms = 0.0
        for row in per_layer.values():
            row["runs"] = [0.0] * len(measured.times)
        for i, symbol in enumerate(measured.symbols):
            samples = [run[i] for run in measured.times]
            med = statistics.median(samples)
            call_no = seen_count.get(symbol, 0)
            seen_count[symbol] = call_no + 1
            split = {}
            builtin = symbol not in kernels
            if not builtin:
                splits = site_splits[symbol]
                if call_no < len(splits):
                    split = splits[call_no]
                elif splits:
                    split = _split(work.get(symbol, {}), kernel_layers[symbol])
                kernel_time[symbol] = kernel_time.get(symbol, 0.0) + med
            else:
                # A builtin counts for a layer only where it computes the layer's output
                # (a reshape); checks and allocations are the runtime's.
                sites = static.builtin_sites.get(symbol, [])
                if call_no < len(sites) and any(out for _, out in origin_sets[sites[call_no]]):
                    split = _split({}, members(sites[call_no]))
            split = {lid: f for lid, f in split.items() if lid in per_layer}
            if not split:
                runtime_ms += med
                if builtin:
                    continue
            for lid, frac in split.items():
                per_layer[lid]["time"] += med * frac
                # each run's own share too: the spread a regression must exceed (compare --fail-on)
                for r, sample in enumerate(samples):
                    per_layer[lid]["runs"][r] += sample * frac
            calls.append(
                {
                    "index": i,
                    "kernel": symbol,
                    "builtin": builtin,
                    "layers": sorted(split),
                    "median_ms": _r(med),
                    "min_ms": _r(min(samples)),
                    "max_ms": _r(max(samples)),
                }
            )

    def share(t: float | None) -> float | None:
        return None if t is None or not total_ms else _r(t / total_ms)

    out_layers = []
    for lay in layers:
        row = per_layer[lay["id"]]
        time_ms = _r(row["time"]) if total_ms is not None else None
        names = row["kernels"]
        out_layers.append(
            {
                "id": lay["id"],
                "subgraph": lay["subgraph"],
                "op_index": lay["op_index"],
                "opcode": lay["opcode"],
                "name": lay["name"],
                "time_ms": time_ms,
                "share": share(row["time"]) if total_ms is not None else None,
                "code_lines": static.layer_lines.get(lay["id"], 0),
                "shared_code_lines": static.layer_shared_lines.get(lay["id"], 0),
                "workspace_bytes": sum(kernels[n].workspace_bytes for n in names),
                "kernels": names,
                "kernel_count": len(names),
                "shared_kernels": [n for n in names if len(kernel_layers[n]) > 1 or len(kernels[n].sites) > 1],
                "flops": _r(row["flops"], 1) if row["has_flops"] else None,
            }
            | ({"time_runs_ms": [_r(t) for t in row["runs"]]} if total_ms is not None else {})
        )
    out_kernels = []
    for name, k in sorted(kernels.items()):
        t = kernel_time.get(name) if total_ms is not None else None
        out_kernels.append(
            {
                "name": name,
                "layers": kernel_layers[name],
                "calls": len(k.sites),
                "shared": len(kernel_layers[name]) > 1 or len(k.sites) > 1,
                "code_lines": k.code_lines,
                "total_lines": k.total_lines,
                "workspace_bytes": k.workspace_bytes,
                "flops": _r(flops.get(name), 1),
                "time_ms": _r(t),
                "share": share(t),
            }
        )
    profile: dict[str, Any] = {
        "status": status.status,
        "reason": status.reason,
        "device": status.device,
        "repeat": status.repeat,
        "warmup": WARMUP if measured is not None else 0,
        "inputs": status.inputs,
        "split": SPLIT_RULE,
        "plain_run_ms": _r(statistics.median(plain)) if plain else None,
        "plain_run_min_ms": _r(min(plain)) if plain else None,
        "plain_run_max_ms": _r(max(plain)) if plain else None,
        "runtime_ms": _r(runtime_ms),
        "device_name": status.device_name,
        "where": "remote" if status.remote else "host",
        "remote": status.remote,
        "clock": measured.clock if measured is not None else None,
        "wall_ms": _r(statistics.median(measured.wall_ms)) if measured is not None else None,
        "plain_wall_ms": _r(statistics.median(measured.plain_wall_ms)) if measured is not None else None,
    }
    if measured is not None and measured.c_fixes:
        profile["c_fixes"] = list(measured.c_fixes)
    if measured is not None and measured.nvtx is not None:
        profile["nvtx"] = measured.nvtx
    return {
        "schema_version": SCHEMA_VERSION,
        "target": target,
        "code_kind": static.code_kind,
        "total_ms": _r(total_ms),
        "profile": profile
        | {
            "total_min_ms": _r(min(sum(run) for run in measured.times))
            if measured is not None and measured.times
            else None
        }
        | (
            {"total_runs_ms": [_r(sum(run)) for run in measured.times]}
            if measured is not None and measured.times
            else {}
        ),
        "totals": {
            "code_lines": static.attributed_lines,
            "workspace_bytes": sum(k.workspace_bytes for k in kernels.values()),
            "flops": _r(sum(flops.get(n, 0.0) * len(k.sites) for n, k in kernels.items()), 1),
            "compile_ms": _r(sum(p["ms"] for p in passes if p.get("ms") is not None), 2),
        },
        "layers": out_layers,
        "kernels": out_kernels,
        "calls": calls,
        "passes": passes,
    }


def build_on_devices(
    layers, static, origin_sets, work, flops, passes, target, status, measured: list[Measured]
) -> dict:
    """``costs.json`` of a model measured on several devices: each device's measurement is
    joined to layers on its own (``build``); every figure is then the median over the
    devices of that figure (a layer's time, a kernel's, a call's, the total), and each layer
    keeps its time on every device (``device_time_ms``, in the order of
    ``profile.remote.devices``), the profile every device's total (``device_total_ms``)."""
    each = [build(layers, static, origin_sets, work, flops, passes, target, status, m) for m in measured]
    if len(each) == 1:
        return each[0]
    if any(m.symbols != measured[0].symbols for m in measured):
        raise ValueError("the devices ran different kernel calls")

    def med(values):
        got = [v for v in values if v is not None]
        return _r(statistics.median(got)) if got else None

    doc = each[0]
    doc["total_ms"] = total = med(d["total_ms"] for d in each)
    for key in PROFILE_NUMBERS:
        doc["profile"][key] = med(d["profile"][key] for d in each)
    doc["profile"]["device_total_ms"] = [d["total_ms"] for d in each]
    for part in ("layers", "kernels"):
        for j, row in enumerate(doc[part]):
            times = [d[part][j]["time_ms"] for d in each]
            row["time_ms"] = med(times)
            row["share"] = _r(row["time_ms"] / total) if row["time_ms"] is not None and total else None
            if part == "layers":
                row["device_time_ms"] = times
    for j, call in enumerate(doc["calls"]):
        for key in ("median_ms", "min_ms", "max_ms"):
            call[key] = med(d["calls"][j][key] for d in each)
    return doc

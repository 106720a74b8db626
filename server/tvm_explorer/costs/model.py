"""``costs.json``: the costs of a compiled model, per layer, kernel, kernel call and pass.

Built once while compiling (``build``), validated by every reader (``validate``). The shape
is documented in docs/bundle-format.md; docs/costs.md says what each number measures.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass

from typing import TYPE_CHECKING

from ..bundle import fields as f

if TYPE_CHECKING:  # the reader imports this module: it must not pull in the profiler
    from .profile import Measured
    from .static import StaticCosts

COSTS_FILE = "costs.json"
SCHEMA_VERSION = 1
SPLIT_RULE = "work"  # a shared kernel call's time is split by its TIR work per layer


@dataclass
class ProfileStatus:
    """Whether run time was measured, and if not, why (one sentence)."""

    status: str  # "measured" | "not_requested" | "unavailable" | "failed"
    reason: str | None = None
    repeat: int = 0
    inputs: str | None = None
    device: str = "cpu"
    device_name: str | None = None  # the GPU's name and architecture, when one ran the model


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


def build(layers: list[dict], static: "StaticCosts", origin_sets: list, work: dict[str, dict[int, float]],
          flops: dict[str, float], passes: list[dict], target: str, status: ProfileStatus,
          measured: "Measured | None") -> dict:
    """The ``costs.json`` document. ``layers``: ``{"id", "subgraph", "op_index", "opcode",
    "name"}`` per layer; ``passes``: ``{"index", "stage", "name", "ms", "changed_functions"}``."""
    from .profile import WARMUP

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

    per_layer = {lay["id"]: {"kernels": [], "flops": 0.0, "has_flops": False, "time": 0.0} for lay in layers}
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

    calls, total_ms, runtime_ms, plain = [], None, None, None
    kernel_time: dict[str, float] = {}
    if measured is not None and measured.times:
        total_ms = statistics.median(sum(run) for run in measured.times)
        plain = measured.plain_ms
        seen_count: dict[str, int] = {}
        runtime_ms = 0.0
        for i, symbol in enumerate(measured.symbols):
            samples = [run[i] for run in measured.times]
            med = statistics.median(samples)
            k = seen_count.get(symbol, 0)
            seen_count[symbol] = k + 1
            split: dict[int, float] = {}
            builtin = symbol not in kernels
            if not builtin:
                splits = site_splits[symbol]
                if k < len(splits):
                    split = splits[k]
                elif splits:
                    split = _split(work.get(symbol, {}), kernel_layers[symbol])
                kernel_time[symbol] = kernel_time.get(symbol, 0.0) + med
            else:
                # A builtin counts for a layer only where it computes the layer's output
                # (a reshape); checks and allocations are the runtime's.
                sites = static.builtin_sites.get(symbol, [])
                if k < len(sites) and any(out for _, out in origin_sets[sites[k]]):
                    split = _split({}, members(sites[k]))
            split = {lid: f for lid, f in split.items() if lid in per_layer}
            if not split:
                runtime_ms += med
                if builtin:
                    continue
            for lid, frac in split.items():
                per_layer[lid]["time"] += med * frac
            calls.append({"index": i, "kernel": symbol, "builtin": builtin, "layers": sorted(split),
                          "median_ms": _r(med), "min_ms": _r(min(samples)), "max_ms": _r(max(samples))})

    def share(t: float | None) -> float | None:
        return None if t is None or not total_ms else _r(t / total_ms)

    out_layers = []
    for lay in layers:
        row = per_layer[lay["id"]]
        time_ms = _r(row["time"]) if total_ms is not None else None
        names = row["kernels"]
        out_layers.append({
            "id": lay["id"], "subgraph": lay["subgraph"], "op_index": lay["op_index"],
            "opcode": lay["opcode"], "name": lay["name"],
            "time_ms": time_ms, "share": share(row["time"]) if total_ms is not None else None,
            "code_lines": static.layer_lines.get(lay["id"], 0),
            "shared_code_lines": static.layer_shared_lines.get(lay["id"], 0),
            "workspace_bytes": sum(kernels[n].workspace_bytes for n in names),
            "kernels": names,
            "kernel_count": len(names),
            "shared_kernels": [n for n in names if len(kernel_layers[n]) > 1 or len(kernels[n].sites) > 1],
            "flops": _r(row["flops"], 1) if row["has_flops"] else None,
        })
    out_kernels = []
    for name, k in sorted(kernels.items()):
        t = kernel_time.get(name) if total_ms is not None else None
        out_kernels.append({
            "name": name, "layers": kernel_layers[name], "calls": len(k.sites),
            "shared": len(kernel_layers[name]) > 1 or len(k.sites) > 1,
            "code_lines": k.code_lines, "total_lines": k.total_lines,
            "workspace_bytes": k.workspace_bytes, "flops": _r(flops.get(name), 1),
            "time_ms": _r(t), "share": share(t),
        })
    profile = {"status": status.status, "reason": status.reason, "device": status.device,
               "repeat": status.repeat, "warmup": WARMUP if measured is not None else 0,
               "inputs": status.inputs, "split": SPLIT_RULE,
               "plain_run_ms": _r(statistics.median(plain)) if plain else None,
               "plain_run_min_ms": _r(min(plain)) if plain else None,
               "plain_run_max_ms": _r(max(plain)) if plain else None,
               "runtime_ms": _r(runtime_ms), "device_name": status.device_name,
               "clock": measured.clock if measured is not None else None,
               "wall_ms": _r(statistics.median(measured.wall_ms)) if measured is not None else None,
               "plain_wall_ms": _r(statistics.median(measured.plain_wall_ms)) if measured is not None else None}
    return {
        "schema_version": SCHEMA_VERSION,
        "target": target,
        "code_kind": static.code_kind,
        "total_ms": _r(total_ms),
        "profile": profile | {"total_min_ms": _r(min(sum(run) for run in measured.times))
                              if measured is not None and measured.times else None},
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


def clock_label(profile: dict) -> str:
    """How the calls of a profile were timed, in words (``CPU time`` on the CPU targets)."""
    if profile.get("clock") == "device_timer":
        return "GPU time (CUDA events)" if profile.get("device") == "cuda" else "wall time (device timer)"
    return "CPU time"


# -- reading ------------------------------------------------------------------------------
_PROFILE_STRINGS = ("reason", "inputs", "device", "device_name", "clock", "split")
_PROFILE_NUMBERS = ("plain_run_ms", "plain_run_min_ms", "plain_run_max_ms", "runtime_ms", "wall_ms",
                    "plain_wall_ms", "total_min_ms")


def _check_profile(profile) -> None:
    f.obj(profile, "'profile'")
    f.string(profile.get("status"), "'profile': 'status'")
    for key in _PROFILE_STRINGS:
        f.string(profile.get(key), f"'profile': '{key}'", nullable=True)
    for key in _PROFILE_NUMBERS:
        f.number(profile.get(key), f"'profile': '{key}'")
    for key in ("repeat", "warmup"):
        f.integer(profile.get(key), f"'profile': '{key}'", nullable=True)


def _check_layer(lay, where: str, layer_count: int) -> None:
    f.obj(lay, where)
    f.integer(lay.get("id"), f"{where}: 'id'", high=max(layer_count - 1, 0))
    if lay["id"] >= layer_count:
        raise ValueError(f"{where}: 'id' names a layer the bundle does not have")
    for key in ("subgraph", "op_index", "code_lines", "workspace_bytes"):
        f.integer(lay.get(key), f"{where}: '{key}'")
    for key in ("shared_code_lines", "kernel_count"):
        if key in lay:
            f.integer(lay[key], f"{where}: '{key}'")
    for key in ("opcode", "name"):
        f.string(lay.get(key), f"{where}: '{key}'")
    for key in ("time_ms", "share", "flops"):
        f.number(lay.get(key), f"{where}: '{key}'")
    f.strings(lay.get("kernels"), f"{where}: 'kernels'")
    if "shared_kernels" in lay:
        f.strings(lay["shared_kernels"], f"{where}: 'shared_kernels'")


def _check_kernel(k, where: str, layer_count: int) -> None:
    f.obj(k, where)
    f.string(k.get("name"), f"{where}: 'name'")
    layers = k.get("layers")
    if not (isinstance(layers, list) and all(isinstance(x, int) and not isinstance(x, bool)
                                             and 0 <= x < layer_count for x in layers)):
        raise ValueError(f"{where}: 'layers' must be a list of the bundle's layer ids")
    for key in ("calls", "code_lines", "workspace_bytes"):
        f.integer(k.get(key), f"{where}: '{key}'")
    if "total_lines" in k:
        f.integer(k["total_lines"], f"{where}: 'total_lines'", nullable=True)
    for key in ("time_ms", "share", "flops"):
        f.number(k.get(key), f"{where}: '{key}'")


def _check_pass(p, where: str) -> None:
    f.obj(p, where)
    f.integer(p.get("index"), f"{where}: 'index'")
    f.string(p.get("name"), f"{where}: 'name'")
    f.string(p.get("stage"), f"{where}: 'stage'", nullable=True)
    f.number(p.get("ms"), f"{where}: 'ms'")
    f.integer(p.get("changed_functions"), f"{where}: 'changed_functions'", nullable=True)


def validate(data, layer_count: int) -> None:
    """Raise ValueError saying which field of a ``costs.json`` document is wrong: every
    value a reader formats or adds up has its type and range checked here, once."""
    if not isinstance(data, dict):
        raise ValueError("not a JSON object")
    if data.get("schema_version") != SCHEMA_VERSION:
        raise ValueError(f"schema version {data.get('schema_version')!r} is not supported "
                         f"(this tvm-explorer reads version {SCHEMA_VERSION})")
    f.number(data.get("total_ms"), "'total_ms'")
    f.string(data.get("code_kind"), "'code_kind'", nullable=True)
    f.string(data.get("target"), "'target'", nullable=True)
    _check_profile(data.get("profile"))
    if data.get("totals") is not None:
        for key, value in f.obj(data["totals"], "'totals'").items():
            f.number(value, f"'totals': '{key}'")
    for key in ("layers", "kernels", "passes", "calls"):
        if not isinstance(data.get(key), list):
            raise ValueError(f"'{key}' must be a list")
    for i, lay in enumerate(data["layers"]):
        _check_layer(lay, f"layer entry {i}", layer_count)
    for i, k in enumerate(data["kernels"]):
        _check_kernel(k, f"kernel entry {i}", layer_count)
    for i, p in enumerate(data["passes"]):
        _check_pass(p, f"pass entry {i}")


def read_costs(bundle) -> dict | None:
    """A bundle's validated ``costs.json``, or None if it has none (compiled before costs
    were recorded). Raises BundleError naming the file if it is damaged."""
    from ..bundle.reader import read_section
    from ..errors import BundleError

    path = bundle.root / COSTS_FILE
    data = read_section(bundle.root, COSTS_FILE, "costs file", bundle.budget)
    if data is None:
        return None
    try:
        validate(data, len(bundle.layers))
    except ValueError as err:
        raise BundleError(f"{path}: {err}") from None
    return data

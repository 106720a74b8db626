"""The tuning ledger (``tuning.json``): per kernel and its layers, tuned / untuned / database
miss / build failed, with the reason, the trials spent, the builder's own errors, and the
kernel's time with TVM's default schedule and with the tuned one, timed side by side here on
the same inputs."""

from __future__ import annotations

import numpy as np
import tvm

from tvm_explorer.bundle.sections.tuning import TUNING_FILE, TunedKernel, TuningDocument, likely_cause
from tvm_explorer.tuning.pipeline import KernelTuning, TuningRun

_MISS_NO_WORKLOAD = (
    "no workload in the database has this PrimFunc's structure: the database was built for another "
    "shape or model, or tuned before FuseOps/FuseTIR (then it names PrimFuncs that no longer exist)"
)
_MISS_NO_RECORD = "the database knows this PrimFunc but holds no candidate that built and ran"


def _time_us(func, inputs) -> float:
    mod = tvm.IRModule({"main": func.with_attr("global_symbol", "main")})
    built = tvm.compile(mod, target=tvm.target.Target("llvm"))
    timer = built.mod.time_evaluator("main", tvm.cpu(), number=10, repeat=3, min_repeat_ms=5)
    return float(np.median(timer(*inputs).results)) * 1e6


def _inputs(func):
    from tvm.s_tir.meta_schedule.arg_info import ArgInfo

    rng = np.random.default_rng(0)
    arrays = []
    for info in ArgInfo.from_prim_func(func):
        shape = [int(d) for d in info.shape]
        dtype = str(info.dtype)
        if dtype.startswith("float"):
            data = rng.standard_normal(shape).astype(dtype)
        else:
            data = rng.integers(0, 4, size=shape).astype(dtype)
        arrays.append(tvm.runtime.tensor(data, tvm.cpu()))
    return arrays


def time_side_by_side(entry: KernelTuning) -> None:
    """Default and tuned time of one applied kernel, on the same inputs, one after the other."""
    if entry.scheduled is None or entry.unscheduled is None:
        return
    try:
        inputs = _inputs(entry.unscheduled)
        entry.default_us = _time_us(entry.unscheduled, inputs)
        entry.tuned_us = _time_us(entry.scheduled, inputs)
    except Exception as err:  # noqa: BLE001 - a kernel we cannot time keeps its state, without times
        entry.default_us = entry.tuned_us = None
        entry.build_errors.append(f"timing: {' '.join(str(err).split())[:300]}")


def _state(entry: KernelTuning, trials_requested: int) -> tuple[str, str | None]:
    if entry.applied:
        return "tuned", None
    if not entry.selected:
        return "untuned", "not among the layers of --tune-only"
    if entry.trials and entry.build_failures == entry.trials:
        return "build_failed", f"all {entry.trials} candidates failed to build"
    if trials_requested > 0 and not entry.in_database_before and entry.trials == 0:
        return "untuned", f"no trials left for it (--tune {trials_requested} ran out before this kernel)"
    if not entry.workload:
        return "miss", _MISS_NO_WORKLOAD
    if entry.trials and entry.build_failures + entry.run_failures == entry.trials:
        return "build_failed", f"all {entry.trials} candidates failed ({entry.build_failures} to build)"
    return "miss", _MISS_NO_RECORD


def document(run: TuningRun, trace_paths: dict[str, str]) -> TuningDocument:
    """``tuning.json`` for a finished ``--tune`` compile (times measured here)."""
    kernels: list[TunedKernel] = []
    for name, entry in sorted(run.kernels.items()):
        state, reason = _state(entry, run.request.trials)
        if state == "tuned":
            time_side_by_side(entry)
        speedup = entry.default_us / entry.tuned_us if entry.default_us and entry.tuned_us else None
        kernels.append(
            {
                "kernel": name,
                "layers": entry.layers,
                "state": state,
                "reason": reason,
                "reused": entry.in_database_before,
                "trials": entry.trials,
                "build_failures": entry.build_failures,
                "run_failures": entry.run_failures,
                "errors": list(entry.build_errors),
                "best_measured_us": _r(entry.best_us),
                "default_us": _r(entry.default_us),
                "tuned_us": _r(entry.tuned_us),
                "speedup": _r(speedup),
                "trace": trace_paths.get(name),
            }
        )
    doc: TuningDocument = {
        "version": 1,
        "target": run.target_name,
        "database": run.request.database,
        "trials_requested": run.request.trials,
        "tuning_seconds": round(run.tuning_seconds, 2),
        "builder_timeout": run.request.builder_timeout,
        "timed_with": "llvm",
        "kernels": kernels,
        "verdict": {"level": "ok", "message": ""},
    }
    doc["verdict"] = likely_cause(doc)
    return doc


def _r(value: float | None) -> float | None:
    return None if value is None else round(float(value), 4)


SECTION = TUNING_FILE

"""The tuning ledger (``tuning.json``): per kernel and its layers, tuned / untuned / database
miss / build failed, with the reason, the trials spent, the builder's own errors, and the
kernel's time with TVM's default schedule and with the tuned one, timed side by side here on
the same inputs."""

from __future__ import annotations

import os
import time

import numpy as np
import tvm

from tvm_explorer.bundle.sections.tuning import NO_RECORD, TUNING_FILE, TunedKernel, TuningDocument, likely_cause
from tvm_explorer.remote.measure import check_times
from tvm_explorer.tuning.pipeline import KernelTuning, TuningRun

_MISS_NO_WORKLOAD = (
    "no workload in the database has this PrimFunc's structure: the database was built for another "
    "shape or model, or tuned before FuseOps/FuseTIR (then it names PrimFuncs that no longer exist)"
)
_MISS_NO_RECORD = f"the database knows this PrimFunc but {NO_RECORD}"


class _Timer:
    """Times one kernel: here (``llvm``, this machine's CPU; ``cuda``, this machine's GPU), or
    on a device of the request's tracker through one RPC session (``remote.devices``), each
    kernel uploaded as a library. ``unmeasured``: why nothing can be timed (cuda without a
    GPU here or a tracker's device), then ``where`` says so and no time is made up."""

    def __init__(self, run: TuningRun):
        from tvm_explorer.tuning import cuda

        self.remote = run.request.remote
        self.target = run.target_name
        self.cuda_target = run.target if cuda.is_cuda(run.target_name) else None
        self.device = None
        self.workdir = None
        self.where = "llvm"
        self.unmeasured: str | None = None
        if self.cuda_target is not None and self.remote is None:
            if run.gpu is None:
                self.unmeasured = (
                    "no CUDA GPU on this machine and no --rpc-tracker device: the kernels were built, not run"
                )
                self.where = f"not measured: {self.unmeasured}"
            else:
                from tvm_explorer.capture.pipeline import enable_real_cuda

                enable_real_cuda(run.gpu)  # the capture built source only; these kernels run
                self.where = f"cuda: {run.gpu.name} ({run.gpu.arch}), this machine"
        if self.remote is not None:
            import tempfile
            from dataclasses import replace

            from tvm_explorer.remote.devices import open_devices

            self.device = open_devices(replace(self.remote, devices=1))[0]
            self.workdir = tempfile.TemporaryDirectory(prefix="tvm-explorer-ledger-")
            self.where = f"{self.device.name}: {self.device.describe()}"
        self.n = 0

    def default_of(self, func):
        """The kernel as TVM builds it untuned: as FuseTIR left it on a CPU; on cuda, with
        dlight's default schedule (an unscheduled kernel cannot run on a GPU)."""
        if self.cuda_target is None:
            return func
        from tvm_explorer.tuning import cuda

        return cuda.default_schedule(func, self.cuda_target)

    def _build_target(self) -> tvm.target.Target:
        return self.cuda_target if self.cuda_target is not None else tvm.target.Target(self.target)

    def time_us(self, func, arrays) -> float:
        mod = tvm.IRModule({"main": func.with_attr("global_symbol", "main")})
        if self.device is None and self.cuda_target is not None:
            built = tvm.compile(mod, target=self.cuda_target)
            dev, module = tvm.cuda(0), built.mod
        elif self.device is None:
            built = tvm.compile(mod, target=tvm.target.Target("llvm"))
            dev, module = tvm.cpu(), built.mod
        else:
            assert self.workdir is not None
            built = tvm.compile(mod, target=self._build_target())
            self.n += 1
            path = os.path.join(self.workdir.name, f"kernel{self.n}.so")
            export_args = {}
            if self.remote is not None and self.remote.cc:
                from tvm.support import cc as tvm_cc

                export_args["fcompile"] = tvm_cc.cross_compiler(self.remote.cc)
            built.mod.export_library(path, **export_args)
            session = self.device.session
            session.upload(path)
            module = session.load_module(os.path.basename(path))
            dev = session.cuda(0) if self.cuda_target is not None else session.cpu(0)
        inputs = [tvm.runtime.tensor(a, dev) for a in arrays]
        # number=1: TVM raises it until a repeat lasts min_repeat_ms (tiny kernels); a default
        # schedule that runs for seconds is then run 3 times, not 30
        timer = module.time_evaluator("main", dev, number=1, repeat=3, min_repeat_ms=5)
        started = time.monotonic()
        results = timer(*inputs).results
        if self.device is not None:  # a device's times are its own words: checked as the profile's are
            results = check_times(
                self.device.name, "a kernel of the tuning ledger", results, time.monotonic() - started
            )
        return float(np.median(results)) * 1e6

    def close(self) -> None:
        if self.workdir is not None:
            self.workdir.cleanup()
        if self.device is not None and self.device.relay is not None:
            self.device.relay.close()


def _inputs(func) -> list[np.ndarray]:
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
        arrays.append(data)
    return arrays


def time_side_by_side(entry: KernelTuning, timer: _Timer) -> None:
    """Default and tuned time of one applied kernel, on the same inputs, one after the other;
    of a kernel left with TVM's default schedule, that time alone (what it costs untuned:
    the time tuning could work on, ``tuning/left.py``)."""
    if entry.unscheduled is None or timer.unmeasured:
        return
    try:
        inputs = _inputs(entry.unscheduled)
        entry.default_us = timer.time_us(timer.default_of(entry.unscheduled), inputs)
        if entry.applied and entry.scheduled is not None:
            entry.tuned_us = timer.time_us(entry.scheduled, inputs)
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
    if entry.trials and entry.run_failures and entry.build_failures + entry.run_failures == entry.trials:
        return "build_failed", (
            f"all {entry.trials} candidates failed: {entry.build_failures} to build, {entry.run_failures} to run "
            "on the device (its own error below)"
        )
    if trials_requested > 0 and not entry.in_database_before and entry.trials == 0:
        return "untuned", f"no trials left for it (--tune {trials_requested} ran out before this kernel)"
    if not entry.workload:
        return "miss", _MISS_NO_WORKLOAD
    return "miss", _MISS_NO_RECORD


def document(run: TuningRun, trace_paths: dict[str, str]) -> TuningDocument:
    """``tuning.json`` for a finished ``--tune`` compile (times measured here, or on a device of
    ``--rpc-tracker``'s key: ``timed_with`` says where)."""
    kernels: list[TunedKernel] = []
    timer = _Timer(run)
    try:
        for entry in run.kernels.values():
            time_side_by_side(entry, timer)
    finally:
        timer.close()
    for name, entry in sorted(run.kernels.items()):
        state, reason = _state(entry, run.request.trials)
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
        "timed_with": timer.where,
        "candidates_ran_on": _candidates_where(run),
        "kernels": kernels,
        "verdict": {"level": "ok", "message": ""},
    }
    if timer.unmeasured:
        doc["times_not_measured"] = timer.unmeasured
    doc["verdict"] = likely_cause(doc)
    return doc


def _candidates_where(run: TuningRun) -> str:
    remote = run.request.remote
    if not any(entry.trials for entry in run.kernels.values()):
        return "nowhere: no candidate was measured in this compile (--tune 0, or the database knew every kernel)"
    if remote is None:
        return "this machine (MetaSchedule's LocalRunner)"
    return f"{remote.where()} (MetaSchedule's RPCRunner)"


def _r(value: float | None) -> float | None:
    return None if value is None else round(float(value), 4)


SECTION = TUNING_FILE

"""The tuning pipeline: TVM's CPU pipeline with MetaSchedule between FuseTIR and the lowering.

The tasks are the fused PrimFuncs FuseTIR leaves (tuning before FuseOps tunes PrimFuncs that
no longer exist when the database is applied: "Tuning record is not found" for every one).
``MetaScheduleTune`` tunes the kernels the database does not know yet (a database that already
holds a kernel is reused, not re-tuned), TVM's own ``MetaScheduleApplyDatabase`` then replaces
each kernel it has a record for, and ``TuningRun`` keeps what happened per kernel for the ledger.
"""

from __future__ import annotations

import math
import os
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import tvm
from tvm import relax

from tvm_explorer.capture.node_collect import collect
from tvm_explorer.errors import ExplorerError
from tvm_explorer.provenance import OriginTable
from tvm_explorer.provenance.spans import read_span
from tvm_explorer.tuning.request import TuneRequest

if TYPE_CHECKING:
    from tvm_explorer.capture.schedules import ScheduleRecorder

MAX_ERRORS_KEPT = 3  # builder/runner errors kept per kernel (the text of each, not a count)


def require_metaschedule() -> None:
    """MetaSchedule's packages are extras of the TVM wheel: say which one is missing, once."""
    import importlib.util

    missing = [name for name in ("psutil", "cloudpickle", "xgboost") if importlib.util.find_spec(name) is None]
    if missing:
        raise ExplorerError(
            f"--tune needs {', '.join(missing)} (MetaSchedule's popen pool and cost model): "
            "pip install 'tvm-explorer[tune]'"
        )


@dataclass
class KernelTuning:
    """What tuning did to one fused PrimFunc."""

    kernel: str
    layers: list[int]
    selected: bool = True
    in_database_before: bool = False
    trials: int = 0
    build_errors: list[str] = field(default_factory=list)
    build_failures: int = 0
    run_failures: int = 0
    best_us: float | None = None
    applied: bool = False
    workload: bool = False
    trace: str | None = None
    default_us: float | None = None
    tuned_us: float | None = None
    unscheduled: object = field(default=None, repr=False)  # the PrimFunc FuseTIR made
    task_mod: object = field(default=None, repr=False)  # MetaSchedule's task: that PrimFunc as "main"
    scheduled: object = field(default=None, repr=False)  # the PrimFunc the database gave


def tuning_target(target: tvm.target.Target, gpu=None) -> tvm.target.Target:
    """The target MetaSchedule tunes for: the compile's, with the number of physical cores
    (MetaSchedule refuses a CPU target without ``num-cores``); for cuda, with the GPU's limits
    (``tuning/cuda.py``; ``gpu``: this machine's GPU, costs.gpu.CudaPlan, or None)."""
    config = dict(target.export())
    if config.get("kind") == "cuda":
        from tvm_explorer.tuning import cuda

        return cuda.tuning_target(target, gpu)
    if config.get("kind") == "c":  # MetaSchedule knows no "c": the host's CPU, the C's (tuning/c_build.py)
        config = {"kind": "llvm"}
    if config.get("kind") != "llvm" or config.get("num-cores"):
        return target
    try:
        import psutil

        cores = psutil.cpu_count(logical=False) or os.cpu_count() or 1
    except ImportError:
        cores = os.cpu_count() or 1
    config["num-cores"] = int(cores)
    return tvm.target.Target(
        {k: v for k, v in config.items() if k in ("kind", "mtriple", "mcpu", "mattr", "num-cores")}
    )


class TuningRun:
    """One ``--tune`` compile: the pipeline to run and what it found, per kernel."""

    def __init__(self, request: TuneRequest, target_name: str, origins: OriginTable, layers, progress=None, gpu=None):
        self.request = request
        self.gpu = gpu  # cuda: this machine's GPU (costs.gpu.CudaPlan), None without one
        self.target: tvm.target.Target | None = None  # the target MetaSchedule tuned for
        self.target_name = target_name
        self.origins = origins
        self.layers = list(layers)
        self.progress = progress
        self.kernels: dict[str, KernelTuning] = {}
        self.tuning_seconds = 0.0
        self.only_layers = self._resolve_only()
        self.schedules: ScheduleRecorder | None = None  # told each tuned kernel's trace

    def _resolve_only(self) -> set[int] | None:
        if not self.request.only:
            return None
        ids: set[int] = set()
        for word in self.request.only:
            hits = {
                lay.id
                for lay in self.layers
                if word in (str(lay.id), lay.name or "", *(t.name for t in getattr(lay, "outputs", ())))
            }
            if not hits:
                raise ExplorerError(
                    f"--tune-only: the model has no layer named {word!r} (names, output tensors or ids)"
                )
            ids |= hits
        return ids

    # -- the pipeline ---------------------------------------------------------------------

    def pipeline(self, target: tvm.target.Target) -> tvm.transform.Pass:
        """TVM's pipeline for the target (the fusing CPU one, or the CUDA backend's) with
        ``MetaScheduleTune`` and ``MetaScheduleApplyDatabase`` after FuseTIR, preceded by our
        rewrites of what TVM cannot build. On cuda, dlight's default schedules (TVM's own
        pass) then schedule the kernels the database did not."""
        from tvm.relax.backend.cpu_generic import pipeline as cpu
        from tvm.relax.backend.cuda import pipeline as gpu_pipeline

        from tvm_explorer.capture.workarounds import with_workarounds
        from tvm_explorer.tuning import cuda

        run = self
        on_gpu = cuda.is_cuda(self.target_name)
        backend = gpu_pipeline if on_gpu else cpu

        @tvm.transform.module_pass(opt_level=0, name="MetaScheduleTune")
        def tune(mod, _ctx):
            run.target = tuning_target(target, run.gpu)
            return run._tune(mod, run.target)

        @tvm.transform.module_pass(opt_level=0, name="TuningLedger")
        def note(mod, _ctx):
            run._note_applied(mod)
            return mod

        @tvm.transform.module_pass(opt_level=0, name="_pipeline")
        def _pipeline(mod, _ctx):
            legalize, after = cuda.split_legalize(target) if on_gpu else (cpu.legalize_passes(target), [])
            with target:
                seq = tvm.transform.Sequential(
                    backend.library_dispatch_passes(target)
                    + legalize
                    + [tune, relax.transform.MetaScheduleApplyDatabase(self.request.database, False), note]
                    + after
                    + backend.dataflow_lower_passes(target)
                    + backend.finalize_passes(target)
                )
                return seq(mod)

        return with_workarounds(_pipeline)

    def _layers_of(self, func) -> list[int]:
        sets = {got[0] for node in collect(func.body, (tvm.tirx.Stmt,)) if (got := read_span(node)) and got[0]}
        return sorted({layer for s in sets for layer in self.origins.layers(s)})

    def _tune(self, mod, target):
        from tvm.s_tir import meta_schedule as ms

        os.makedirs(self.request.database, exist_ok=True)
        tasks = ms.relax_integration.extract_tasks(mod, target)
        database = ms.database.JSONDatabase(work_dir=self.request.database)
        todo = []
        for task in tasks:
            func = mod[task.task_name] if task.task_name in [g.name_hint for g in mod.functions] else None
            entry = KernelTuning(task.task_name, self._layers_of(func) if func is not None else [])
            entry.unscheduled = func
            entry.task_mod = task.dispatched[0]
            # Known = a record that built and ran: a workload alone (every build failed, or a
            # run interrupted before any record) is tuned again.
            entry.in_database_before = database.query_tuning_record(entry.task_mod, target, task.task_name) is not None
            if self.only_layers is not None and not (set(entry.layers) & self.only_layers):
                entry.selected = False
            self.kernels[task.task_name] = entry
            if entry.selected and not entry.in_database_before and self.request.trials > 0:
                todo.append(task)
        if todo:
            self._run_tuner(ms, todo, database)
        self._record_traces(database, target)
        return mod

    def _record_traces(self, database, target) -> None:
        """Each kernel's best record, its trace replayed on the task so that every loop it made
        is linked to the step that made it (``capture.schedules``, as for dlight's schedules).
        Recorded before ``MetaScheduleApplyDatabase`` runs: the IR it prints links to them."""
        from tvm import s_tir

        from tvm_explorer.capture.schedules import METASCHEDULE

        for name, entry in sorted(self.kernels.items()):
            if entry.task_mod is None:
                continue
            record = database.query_tuning_record(entry.task_mod, target, name)
            if record is None:
                continue
            entry.trace = record.trace
            if self.schedules is not None:
                sch = s_tir.Schedule(entry.task_mod)
                record.trace.apply_to_schedule(sch, remove_postproc=False)
                self.schedules.add(name, METASCHEDULE, sch)

    def _run_tuner(self, ms, todo, database) -> None:
        require_metaschedule()
        c_target = self.target_name.split()[0] == "c"
        from tvm_explorer.tuning import c_build, cuda, intrinsics

        cuda.use_compiler(self.gpu)
        intrinsics.preload()
        contexts, weights = ms.relax_integration.extracted_tasks_to_tune_contexts(
            todo,
            self.request.database,
            space=c_build.c_space(ms) if c_target else "post-order-apply",
            seed=self.request.seed,
        )
        builder_args = {"f_build": c_build.build_c, "f_export": c_build.export_c} if c_target else {}
        per_task = max(1, math.ceil(self.request.trials / max(1, len(contexts))))
        callbacks = list(ms.measure_callback.MeasureCallback.create("default")) + [
            _ledger_callback(ms, self, [t.task_name for t in todo])
        ]
        started = time.monotonic()
        if self.progress is not None:
            self.progress.begin("tune", f"MetaSchedule: {len(contexts)} kernel(s), {self.request.trials} trials")
        try:
            ms.tune.tune_tasks(
                tasks=contexts,
                task_weights=weights,
                work_dir=self.request.database,
                max_trials_global=self.request.trials,
                max_trials_per_task=per_task,
                # at least two batches per kernel past 8 trials: progress, and records kept on Ctrl-C
                num_trials_per_iter=per_task if per_task <= 8 else min(64, math.ceil(per_task / 2)),
                builder=ms.builder.LocalBuilder(
                    timeout_sec=self.request.builder_timeout,
                    max_workers=1,
                    initializer=intrinsics.preload,
                    **builder_args,
                ),
                runner=self._runner(ms),
                database=database,
                measure_callbacks=callbacks,
            )
        finally:
            self.tuning_seconds = time.monotonic() - started

    def _runner(self, ms):
        """Where the candidates run: here, or on the tracker's devices (``--rpc-tracker``) through
        MetaSchedule's own RPCRunner (it uploads each built candidate and times it there)."""
        remote = self.request.remote
        timeout = max(30.0, self.request.builder_timeout)
        if remote is None:
            if self.gpu is None and self.target is not None and self.target.kind.name == "cuda":
                raise ExplorerError(
                    "--tune for cuda times each candidate on a GPU: none here; give --rpc-tracker HOST:PORT "
                    "--rpc-key KEY of a device with one, or --tune 0 to apply an existing database"
                )
            return ms.runner.LocalRunner(timeout_sec=timeout)
        assert remote.tracker is not None and remote.key is not None  # tuning/request.py refuses --rpc
        config = ms.runner.RPCConfig(
            tracker_host=remote.tracker[0],
            tracker_port=remote.tracker[1],
            tracker_key=remote.key,
            session_timeout_sec=int(max(timeout, remote.timeout)),
        )
        return ms.runner.RPCRunner(rpc_config=config, max_workers=remote.devices)

    def _note_applied(self, mod) -> None:
        from tvm.s_tir import meta_schedule as ms

        database = ms.database.JSONDatabase(work_dir=self.request.database)
        for gv, func in mod.functions.items():
            entry = self.kernels.get(gv.name_hint)
            if entry is None or not isinstance(func, tvm.tirx.PrimFunc):
                continue
            entry.applied = bool(func.attrs is not None and func.attrs.get("tirx.is_scheduled", False))
            if entry.task_mod is not None:
                entry.workload = database.has_workload(entry.task_mod)
            if entry.applied:
                entry.scheduled = func


def _ledger_callback(ms, run: TuningRun, names: list[str]):
    """A measure callback: per batch of candidates, the kernel's trials, build and run failures
    (with the builder's own text) and best time; progress per task."""
    from tvm.ir.utils import derived_object

    @derived_object
    class _Ledger(ms.measure_callback.PyMeasureCallback):
        def apply(self, task_scheduler, task_id, measure_candidates, builder_results, runner_results):
            entry = run.kernels.get(names[task_id]) if task_id < len(names) else None
            if entry is None:
                return
            for built, ran in zip(builder_results, runner_results):
                entry.trials += 1
                if built.error_msg:
                    entry.build_failures += 1
                    if len(entry.build_errors) < MAX_ERRORS_KEPT:
                        entry.build_errors.append(_brief(built.error_msg))
                elif ran.error_msg or not ran.run_secs:
                    entry.run_failures += 1
                    if len(entry.build_errors) < MAX_ERRORS_KEPT:
                        entry.build_errors.append("run: " + _brief(ran.error_msg or "no time measured"))
                else:
                    us = 1e6 * sum(float(x) for x in ran.run_secs) / len(ran.run_secs)
                    entry.best_us = us if entry.best_us is None else min(entry.best_us, us)
            if run.progress is not None:
                best = f", best {entry.best_us:.2f} us" if entry.best_us is not None else ", no candidate ran yet"
                fails = f", {entry.build_failures} failed to build" if entry.build_failures else ""
                run.progress.begin("tune", f"tuning {entry.kernel}: {entry.trials} trials{best}{fails}")

    return _Ledger()


def _brief(text: str) -> str:
    """The builder's own message, its last meaningful lines (a traceback ends with the error)."""
    lines = [line.rstrip() for line in str(text).splitlines() if line.strip()]
    return "\n".join(lines[-6:])[:1200]

"""Capture entry points: ``compile_model`` (what the CLI runs) and ``Capture`` (for scripts
that drive TVM themselves)."""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import tvm

from tvm_explorer.bundle.writer import BundleWriter
from tvm_explorer.capture.codegen import CodeCoverage, index_llvm, index_source
from tvm_explorer.capture.compile_recorder import CaptureSession
from tvm_explorer.capture.exact import ExactOrigins
from tvm_explorer.capture.pipeline import TARGETS, build, generated_sources, make_target
from tvm_explorer.capture.progress import Listener, Progress, plan_steps
from tvm_explorer.capture.schedules import ScheduleRecorder
from tvm_explorer.costs.record import CostRecorder
from tvm_explorer.errors import ExplorerError
from tvm_explorer.frontends import from_memory, import_any, layer_table, load_any, load_as
from tvm_explorer.frontends.model import Model
from tvm_explorer.memory.record import MemoryRecorder
from tvm_explorer.provenance import OriginTable
from tvm_explorer.version import __version__

if TYPE_CHECKING:
    from tvm_explorer.bundle.index import Range
    from tvm_explorer.bundle.sections.tuning import TuningDocument
    from tvm_explorer.tuning.pipeline import TuningRun

_CODE_DOCUMENTS = {"c": "code/module.c", "cuda": "code/device.cu", "ll": "code/host.ll"}


@dataclass
class CompileResult:
    """What a capture produced.

    ``coverage`` (units and attributed lines of each generated source) is computed when
    first read if no bundle was written: only a written bundle needs the source indexed.
    """

    bundle: Path | None
    executable: object
    passes: int
    documents: int
    _coverage: dict | None = field(default_factory=dict, repr=False)
    _compute_coverage: Callable[[], dict] | None = field(default=None, repr=False)
    costs: dict | None = None  # costs.json as written (see costs/)
    memory: dict | None = None  # memory.json as written (see memory/)
    memory_failure: str | None = None  # why no memory.json was written (a bug of ours)
    tuning: TuningDocument | None = None  # tuning.json as written (compile --tune; see tuning/)

    @property
    def coverage(self) -> dict:
        """``{"c" | "cuda": {"units": n, "attributed": m}}`` for the generated source."""
        if self._coverage is None:
            self._coverage = self._compute_coverage() if self._compute_coverage else {}
            self._compute_coverage = None
        return self._coverage


def _loaded(model: str | os.PathLike | Model) -> Model:
    """``model`` read by its kind's frontend, unless it is a model already loaded."""
    return load_any(model) if isinstance(model, (str, os.PathLike)) else model


def _layer_table(model: Model) -> list[dict]:
    return layer_table(model)


def _add_generated_code(session: CaptureSession, executable, target: str, sass: str | None = None) -> dict:
    """Write the generated source documents with line-level provenance (and, with ``sass``,
    the CUDA's machine code for that GPU architecture, joined to the same provenance)."""
    coverage: dict[str, dict[str, int]] = {}
    sources = generated_sources(executable, target)
    index = session.pass_index
    for kind, text in sorted(sources.items()):
        path = _CODE_DOCUMENTS[kind]
        if session.progress is not None:
            session.progress.begin("code", f"codegen ({kind})")
        ranges: list[Range]
        cov: CodeCoverage | None
        if session.final_tir is None:
            ranges, cov = [], None
        elif kind == "ll":
            ranges, cov = index_llvm(text, session.final_tir, session.tracker), None
        else:
            link = session.schedules.trace_link if session.schedules is not None else None
            ranges, cov = index_source(text, session.final_tir, session.tracker, session.origins, link)
        if session.writer is not None:
            session.writer.add_document(path, text, ranges, "code", pass_index=index)
            session.writer.passes.append(
                {
                    "index": index,
                    "stage": "code",
                    "name": f"codegen ({kind})",
                    "changed": True,
                    "before": session.last_document.get("tir"),
                    "after": path,
                    "units": cov.units if cov else 0,
                    "attributed": cov.attributed if cov else 0,
                }
            )
        if cov is not None:
            coverage[kind] = {"units": cov.units, "attributed": cov.attributed}
        index += 1
        if session.progress is not None:
            session.progress.step("code", f"codegen ({kind})")
        if sass and kind == "cuda" and session.writer is not None:
            _add_machine_code(session, session.writer, text, ranges, path, sass, index)
            index += 1
    session.pass_index = index
    return coverage


def _add_machine_code(
    session: CaptureSession, writer: BundleWriter, text: str, ranges: list[Range], path: str, arch: str, index: int
) -> None:
    """The SASS document of ``--sass ARCH`` (after its CUDA document) and ``sass.json``."""
    from tvm_explorer.sass.machine import SECTION, machine_code

    name = f"sass ({arch})"
    if session.progress is not None:
        session.progress.begin("code", f"{name}: nvcc and nvdisasm")
    got = machine_code(text, ranges, session.origins.layers, arch, cuda_path=path)
    writer.add_document(got.path, got.text, got.ranges, "code", pass_index=index, source=path)
    writer.passes.append(
        {
            "index": index,
            "stage": "code",
            "name": name,
            "changed": True,
            "before": path,
            "after": got.path,
            "units": len(got.ranges),
            "attributed": sum(1 for r in got.ranges if r.origin_set),
        }
    )
    writer.add_file(SECTION, json.dumps(got.section, indent=1))
    if session.progress is not None:
        session.progress.step("code", name)


def _add_schedule_traces(session: CaptureSession) -> None:
    if session.schedules is None or session.writer is None:
        return
    for entry, text in session.schedules.files():
        session.writer.add_file(entry["path"], text)
        session.writer.traces.append(entry)


def _add_tuning_ledger(session: CaptureSession, writer: BundleWriter, tuning: TuningRun) -> TuningDocument:
    """``tuning.json``: per kernel tuned / untuned / miss / build failed, default and tuned time
    measured side by side now (docs/tuning.md)."""
    from tvm_explorer.tuning.ledger import SECTION, document

    if session.progress is not None:
        session.progress.begin("run", "tuning ledger: timing default and tuned kernels")
    from tvm_explorer.capture.schedules import METASCHEDULE

    # on cuda the untuned kernels have dlight's traces: the ledger names the tuned ones'
    traces = {entry["primfunc"]: entry["path"] for entry in writer.traces if entry["rule"] == METASCHEDULE}
    doc = document(tuning, traces)
    writer.add_file(SECTION, json.dumps(doc, indent=1))
    return doc


def _finish_memory(memory: MemoryRecorder, session: CaptureSession, costs: CostRecorder, target: str) -> None:
    """``memory.json``: the timeline, what the profiled run allocated, and (profiled) the
    reference engine's own arena for the model."""
    reference = None
    if costs.profile is not None:
        from tvm_explorer.frontends import frontend_of

        arena = frontend_of(memory.model).reference.arena
        path = str(getattr(memory.model, "path", ""))
        if arena is not None and os.path.isfile(path):
            reference = arena(path)
    memory.finish(session, target, costs.allocations, costs.allocations_why_not, reference)


def _manifest(model: Model, target: str, options: dict) -> dict:
    return {
        "tool": {"tvm_explorer": __version__, "tvm": tvm.__version__},
        "model": {
            "file": model.name,
            # Where it was compiled from: ``tvm-explorer profile`` rebuilds the bundle from it.
            "path": os.path.abspath(model.path) if os.path.isfile(str(model.path)) else None,
            "kind": getattr(model, "kind", "tflite"),
            "sha256": model.sha256,
            "subgraphs": len(model.subgraphs),
            "operators": len(model.layers),
        },
        "target": target,
        "options": options,
    }


def compile_model(
    model_path: str | os.PathLike | Model,
    bundle: str | os.PathLike | None,
    target: str = "c",
    *,
    fill_spans: bool = True,
    exact_origins: bool = False,
    schedule_records: bool = True,
    on_progress: Listener | None = None,
    profile=None,
    after_build=None,
    pipeline: str | None = None,
    on_session=None,
    after_build_steps: int = 0,
    sass: str | None = None,
    tune=None,
) -> CompileResult:
    """Import a model (``.tflite``, ``.onnx``, ``.pt2``), compile it with TVM's real pipeline,
    and write a bundle.

    ``bundle=None`` keeps provenance through every pass but writes nothing (for measuring;
    the generated source is indexed only when ``result.coverage`` is read).
    ``fill_spans=False`` is a plain stock import and compile (no provenance at all).
    ``on_progress`` is called with a ``ProgressEvent`` after every step (see capture/progress.py).
    ``profile``: measure run time per layer: True, a repeat count, or a
    ``costs.request.ProfileRequest`` (repeat, inputs). On ``cuda`` with a GPU here the kernels
    are built for that GPU and timed with CUDA events (docs/costs.md).
    ``after_build(session, executable)``, if given, runs before the bundle is committed and
    returns extra files for it (``{path: text}``; ``--numerics`` adds ``numerics.json``);
    ``after_build_steps``: the progress steps it reports itself (``session.progress``), so
    that the planned total counts them.
    ``pipeline``: ``MODULE:FUNCTION`` of a Relax pipeline of the user's (``--pipeline``).
    ``on_session(session)`` is called once the capture session exists (to add listeners).
    ``sass``: a GPU architecture (``sm_90``): on ``cuda``, compile the generated CUDA to machine
    code with NVIDIA's tools and add it, joined to layers (docs/sass.md).
    ``tune``: a ``tuning.request.TuneRequest`` (``--tune``): MetaSchedule after FuseTIR, the
    database applied, the ledger written as ``tuning.json`` (docs/tuning.md).
    Raises ExplorerError (ModelError for bad models) with a message for the user.
    """
    if target not in TARGETS:
        make_target(target)  # raises the clear error
    model = _loaded(model_path)
    user_pipeline = None
    if pipeline:
        from tvm_explorer.capture.custom_pipeline import make_pipeline

        user_pipeline = make_pipeline(pipeline, make_target(target))
    if tune is not None and pipeline:
        raise ExplorerError("--tune and --pipeline: tuning runs TVM's own CPU pipeline; choose one")
    if not fill_spans:
        mod = import_any(model, None, fill_spans=False)
        return CompileResult(None, build(mod, target, pipeline=user_pipeline), 0, 0)
    costs = CostRecorder(model, profile) if bundle is not None else None
    writer = BundleWriter(bundle, (model.path,)) if bundle is not None else None
    try:
        origins = OriginTable()
        session = CaptureSession(model, writer, origins)
        memory = MemoryRecorder(model, costs.arrays) if costs is not None else None
        if memory is not None:
            memory.listen(session)
        if on_progress is not None:
            planned = plan_steps(target)
            # The runs after the build are steps too (profiling, the caller's numerics).
            runs = (profile is not None) + after_build_steps + bool(sass and target == "cuda")
            session.progress = Progress(on_progress, planned + runs if planned else 0)
        tuning = None
        if tune is not None:
            from tvm_explorer.tuning.pipeline import TuningRun

            gpu = None
            if target == "cuda":
                from tvm_explorer.costs.gpu import cuda_plan

                gpu = cuda_plan()[0]
            tuning = TuningRun(tune, target, origins, model.layers, session.progress, gpu)
            user_pipeline = tuning.pipeline(make_target(target, gpu.arch if gpu is not None else None))
            if writer is not None and schedule_records:
                session.schedules = tuning.schedules = ScheduleRecorder()
        if user_pipeline is not None:
            session.containers.add(user_pipeline.info.name)
        if on_session is not None:
            on_session(session)
        session.write_model_document()
        mod = import_any(model, origins)
        session.record("import", mod, "relax")
        instruments: list[object] = [session.instrument()]
        if exact_origins:
            instruments.insert(0, ExactOrigins())
        if schedule_records and target == "cuda" and writer is not None:
            session.schedules = ScheduleRecorder()
            instruments.append(session.schedules.instrument())
            if tuning is not None:  # one recorder: MetaSchedule's traces, and dlight's for the rest
                tuning.schedules = session.schedules
        if costs is not None:
            instruments = costs.wrap(instruments)
        plan = costs.plan_build(target) if costs is not None else None
        try:
            if session.schedules is not None and (tuning is None or target == "cuda"):
                with session.schedules:
                    executable = build(mod, target, instruments, user_pipeline, plan)
            else:
                executable = build(mod, target, instruments, user_pipeline, plan)
        except ExplorerError:
            raise
        except Exception as err:  # noqa: BLE001 - TVM failures reach the user as one message
            text = " ".join(str(err).split())
            first = text[:500] or type(err).__name__
            how = f" with --pipeline {pipeline}" if pipeline else " with --tune" if tuning is not None else ""
            where = session.failure_context(text)
            raise ExplorerError(
                f"{model.path}: TVM failed to compile the model for {target}{how}{where}: {first}"
            ) from None
        if session.progress is not None:
            session.progress.begin("code", "printing the IR of every pass")
        session.flush_documents()  # the IR of every pass, printed now that TVM is idle
        if writer is None:
            # Nothing is written: index the generated source only if someone asks.
            return CompileResult(
                None, executable, session.pass_index, 0, None, lambda: _add_generated_code(session, executable, target)
            )
        assert costs is not None and memory is not None  # made with the writer: a bundle is written
        code_cov = _add_generated_code(session, executable, target, sass)
        _add_schedule_traces(session)
        ledger = _add_tuning_ledger(session, writer, tuning) if tuning is not None else None
        if profile is not None and session.progress is not None:
            session.progress.starting("run", "profile: timing every kernel call")
        costs.finish(session, executable, target)
        _finish_memory(memory, session, costs, target)
        for extra_path, extra_text in (after_build(session, executable) if after_build else {}).items():
            writer.add_file(extra_path, extra_text)
        options: dict[str, object] = {
            "spans": True,
            "exact_origins": exact_origins,
            "schedule_records": schedule_records,
        }
        if pipeline:
            options["pipeline"] = pipeline
        if model.pinned:
            options["input_shapes"] = {name: list(dims) for name, dims in model.pinned.items()}
        if sass:
            options["sass"] = sass
        if tune is not None:
            options["tune"] = {"trials": tune.trials, "database": tune.database, "only": list(tune.only)}
        n_docs, n_passes = len(writer.documents), len(writer.passes)
        if session.progress is not None:
            session.progress.writing()
        path = writer.commit(_manifest(model, target, options), _layer_table(model), origins)
        if session.progress is not None:
            session.progress.finish()
        return CompileResult(
            path,
            executable,
            n_passes,
            n_docs,
            code_cov,
            costs=costs.costs,
            memory=memory.doc,
            memory_failure=memory.failure,
            tuning=ledger,
        )
    except BaseException:
        if writer is not None:
            writer.abort()
        raise


class Capture:
    """Record whatever TVM compiles inside a ``with`` block into a bundle.

    ``cap.module`` is the span-filled Relax import of the model; compile it (or a module
    derived from it) with any pipeline inside the block. ``cap.add_executable(ex)`` adds the
    generated source. The bundle is written when the block ends without an exception, with
    ``costs.json`` like the CLI's: static costs always, and measured run time per layer with
    ``profile=`` (True, a repeat count, or a ``ProfileRequest``), taken from the executable
    added last. ``cap.costs`` is that document once the bundle is written.
    """

    def __init__(
        self,
        model_path: str | os.PathLike | Model,
        bundle: str | os.PathLike,
        target: str | None = None,
        *,
        profile=None,
    ):
        """``model_path``: a ``.tflite``/``.onnx``/``.pt2`` file or a model loaded by a frontend
        (see ``from_onnx`` and ``from_torch``)."""
        self.model = _loaded(model_path)
        self.target = target
        # Checked first: a bad --inputs file or repeat count leaves nothing written.
        self._costs = CostRecorder(self.model, profile)
        self.costs: dict | None = None
        self._writer = BundleWriter(bundle, (model_path,))
        self._origins = OriginTable()
        self._session = CaptureSession(self.model, self._writer, self._origins)
        self._memory = MemoryRecorder(self.model, self._costs.arrays)
        self._memory.listen(self._session)
        self._ctx: tvm.transform.PassContext | None = None
        self._executable: tvm.runtime.Executable | None = None
        self.module = None
        self.bundle: Path | None = None

    @classmethod
    def from_onnx(cls, model, bundle: str | os.PathLike, target: str | None = None, *, profile=None) -> Capture:
        """A capture of an ONNX model: a path, or an ``onnx.ModelProto`` already in memory."""
        if isinstance(model, (str, os.PathLike)):
            return cls(load_as("onnx", model), bundle, target, profile=profile)
        return cls(from_memory("onnx", model), bundle, target, profile=profile)

    @classmethod
    def from_torch(
        cls,
        program,
        example_args=None,
        bundle: str | os.PathLike | None = None,
        target: str | None = None,
        *,
        name: str = "model.pt2",
        profile=None,
    ) -> Capture:
        """A capture of a PyTorch program: a ``torch.export.ExportedProgram``, or an
        ``nn.Module`` exported here with ``example_args`` (a tuple of tensors)."""
        if bundle is None:
            raise TypeError("Capture.from_torch needs a bundle path")
        return cls(from_memory("torch", program, example_args, name), bundle, target, profile=profile)

    @classmethod
    def from_nn(
        cls,
        module,
        spec,
        bundle: str | os.PathLike | None = None,
        target: str | None = None,
        *,
        name: str | None = None,
        profile=None,
    ) -> Capture:
        """A capture of a ``tvm.relax.frontend.nn`` module: ``module`` (an ``nn.Module``) and
        ``spec`` as ``module.export_tvm(spec)`` takes it. Every op the module emits is a node
        with its module path and the line of your code that called it. ``name``: what the
        bundle calls the model (default: the module's class)."""
        if bundle is None:
            raise TypeError("Capture.from_nn needs a bundle path")
        label = name or f"{type(module).__name__}.nn"
        return cls(from_memory("nn", module, spec, label), bundle, target, profile=profile)

    def _cuda_plan(self, target: str):
        if target != "cuda" or self._costs.profile is None:
            return None
        if self._costs.cuda_plan is None and self._costs.cuda_reason is None:
            self._costs.plan_build(target)
        return self._costs.cuda_plan

    def target_for(self, target: str) -> tvm.target.Target:
        """The TVM target to compile for (``c``, ``llvm`` or ``cuda``): for a profiled
        ``cuda`` capture on a machine with a GPU, that GPU's architecture."""
        plan = self._cuda_plan(target)
        return make_target(target, plan.arch if plan is not None else None)

    def pipeline(self, target: str):
        """TVM's Relax pipeline for ``target`` (``c``, ``llvm`` or ``cuda``). For ``cuda`` it
        makes TVM generate source only, unless the capture is profiled and a GPU is here: then
        the kernels are compiled for it (compile with ``target_for("cuda")``)."""
        from tvm_explorer.capture.pipeline import enable_real_cuda, enable_source_only_cuda, relax_pipeline

        self.target = target
        if target == "cuda":
            plan = self._cuda_plan(target)
            if plan is not None:
                enable_real_cuda(plan)
            else:
                enable_source_only_cuda()
        return relax_pipeline(target, self.target_for(target))

    def add_executable(self, executable) -> None:
        """Include the generated source of a built executable in the bundle."""
        self._executable = executable

    def __enter__(self) -> Capture:
        try:
            self._session.write_model_document()
            self.module = import_any(self.model, self._origins)
            self._session.record("import", self.module, "relax")
            cur = tvm.transform.PassContext.current()
            self._ctx = tvm.transform.PassContext(
                opt_level=cur.opt_level if cur.opt_level is not None else 3,
                required_pass=list(cur.required_pass),
                disabled_pass=list(cur.disabled_pass),
                instruments=self._costs.wrap(list(cur.instruments) + [self._session.instrument()]),
                config=dict(cur.config),
            )
            self._ctx.__enter__()
        except BaseException:
            self._writer.abort()
            raise
        return self

    def __exit__(self, exc_type, exc, tb):
        assert self._ctx is not None, "__exit__ without __enter__"
        self._ctx.__exit__(exc_type, exc, tb)
        if exc_type is not None:
            self._writer.abort()
            return False
        try:
            self._session.flush_documents()
            target = self.target or "c"
            if self._executable is not None:
                _add_generated_code(self._session, self._executable, target)
            self.costs = self._costs.finish(self._session, self._executable, target)
            _finish_memory(self._memory, self._session, self._costs, target)
            options = {"spans": True, "exact_origins": False, "schedule_records": True}
            self.bundle = self._writer.commit(
                _manifest(self.model, self.target or "unknown", options), _layer_table(self.model), self._origins
            )
        except BaseException:
            self._writer.abort()
            raise
        return False

"""``tvm-explorer compile MODEL -o BUNDLE``: parse the command line into a CompileJob
(``app.jobs``) and compile it in a supervised child process (``supervise.supervisor``), with
progress, costs and numerics, and report the bundle. ``profile`` runs its rebuild here too."""

from __future__ import annotations

import argparse
import os
import signal
import sys
from pathlib import Path

from tvm_explorer.app.jobs import CompileJob, TuneOptions
from tvm_explorer.cli.options import (
    DEFAULT_TIMEOUT,
    add_in_process_option,
    add_limit_options,
    add_pipeline_option,
    add_progress_option,
    add_target_option,
    add_trust_option,
    apply_memory_limit,
    apply_trust,
    fail,
    fail_with,
    input_shape_argument,
    job_from,
)
from tvm_explorer.errors import EXIT_INTERRUPTED, EXIT_TIMEOUT, ExplorerError, RemoteError
from tvm_explorer.supervise.supervisor import STOP_SIGNALS as _STOP_SIGNALS


def add_parser(sub) -> None:
    p = sub.add_parser("compile", help="compile a model into an explorer bundle")
    add_options(p)
    p.set_defaults(run=run)


def add_options(p: argparse.ArgumentParser) -> None:
    """The options of ``compile``; ``job_of`` reads them into the CompileJob (an option added
    here gets its field in ``app.jobs.CompileJob`` and its line in ``job_of``)."""
    p.add_argument(
        "model",
        help="the model: .tflite, .onnx, .pt2 (a saved torch.export program) or FILE.py:FACTORY "
        "(a tvm.relax.frontend.nn model; FILE.py is code and is run)",
    )
    p.add_argument("-o", "--output", help="bundle directory to write")
    add_target_option(
        p,
        "c",
        "c (default), llvm or cuda; 'llvm -mtriple=TRIPLE [-mcpu=CPU]' builds for another machine (--rpc)",
    )
    p.add_argument(
        "--exact-origins",
        action="store_true",
        help="one PrimFunc per call site, so every statement has exactly one origin",
    )
    p.add_argument("--no-schedule-records", action="store_true", help="do not record GPU schedule traces")
    p.add_argument(
        "--no-spans",
        action="store_true",
        help="span filling off: a plain stock TVM compile that records nothing and "
        "writes no bundle (to compare overhead)",
    )
    add_limit_options(
        p,
        timeout_help=f"stop a compile that runs longer (default {DEFAULT_TIMEOUT:g}; 0: never)",
        memory_help="address-space limit of the compile (default: 3/4 of the memory, at least 4 GiB; 0: none)",
    )
    add_progress_option(
        p, help="progress: a bar on a terminal (auto, the default), JSON lines on stdout (json), or none"
    )
    add_pipeline_option(
        p,
        "compile with your own Relax pipeline: FUNCTION(target) returns a "
        "tvm.transform.Pass; MODULE is imported from the current directory or "
        "PYTHONPATH (default: TVM's pipeline for the target)",
    )
    p.add_argument(
        "--input-shape",
        action="append",
        type=input_shape_argument,
        default=[],
        metavar="NAME=D1,D2,…",
        help="sizes for an input whose dimensions the model leaves open (ONNX dim names, PyTorch "
        "dynamic dims, TFLite shape_signature -1), e.g. images=1,3,640,640; repeat for each input",
    )
    p.add_argument(
        "--sass",
        nargs="?",
        const="sm_90",
        metavar="ARCH",
        help="with --target cuda: also compile the CUDA to machine code for GPU architecture ARCH "
        "(default sm_90, H100/H200) with NVIDIA's nvcc and nvdisasm, every instruction joined to its "
        "layer (docs/sass.md; needs the [sass] extra, no GPU)",
    )
    p.add_argument(
        "--tune",
        type=int,
        metavar="TRIALS",
        help="with --target llvm, c or cuda: tune the fused kernels with MetaSchedule, TRIALS candidates in all "
        "(0: apply the database only); kernels the database already knows are reused, not re-tuned; cuda "
        "candidates run on a GPU: this machine's, or the --rpc-tracker/--rpc-key devices' "
        "(docs/tuning.md; needs the [tune] extra)",
    )
    p.add_argument(
        "--tuning-db",
        metavar="DIR",
        help="the MetaSchedule database folder to read and extend (default: tuning-db beside the bundle)",
    )
    p.add_argument(
        "--tune-only",
        metavar="LAYERS",
        help="tune only the kernels of these layers (names, output tensors or ids, comma-separated)",
    )
    p.add_argument(
        "--tune-builder-timeout",
        type=float,
        metavar="SECONDS",
        help="seconds a candidate may take to build (default 60; a builder worker's start-up is not counted)",
    )
    add_trust_option(p)
    add_in_process_option(p)
    from tvm_explorer.cli.costs import add_profile_options
    from tvm_explorer.cli.numerics import add_compile_options

    add_profile_options(p)
    add_compile_options(p)


def job_of(args: argparse.Namespace) -> CompileJob:
    """The CompileJob of ``compile``'s parsed command line."""
    from tvm_explorer.cli.costs import measure_of

    return job_from(
        CompileJob,
        args,
        schedule_records=not args.no_schedule_records,
        fill_spans=not args.no_spans,
        input_shapes=tuple(args.input_shape),
        tune=TuneOptions(args.tune, args.tuning_db, args.tune_only, args.tune_builder_timeout),
        measure=measure_of(args, profile=args.profile),
    )


def run(args: argparse.Namespace) -> int:
    """``tvm-explorer compile``."""
    return run_compile_job(job_of(args))


def _stopped_message(job: CompileJob, why: str, committed: bool) -> str:
    if committed:
        return f"{why} after the bundle was written; {job.output} is complete"
    return f"{why}; no bundle was written (a previous bundle is unchanged)"


def _compile_in_this_process(job: CompileJob) -> int:
    from tvm_explorer.bundle import writer

    apply_trust(job.trust_pickle)

    stop: dict = {}
    # Interrupts are raised into the code only while it compiles; one arriving later (or
    # while an error is being reported) is noted and reported once, never raised where
    # nothing would catch it.
    compiling = {"now": False}

    def on_signal(signum, _frame):
        if stop and not stop.pop("lost", False):
            return  # already stopping: let the cleanup finish
        if not stop:
            stop["why"] = (
                f"{job.model}: compile did not finish within {job.limits.timeout:g} s (--timeout)"
                if signum == signal.SIGUSR1
                else f"interrupted ({signal.Signals(signum).name})"
            )
            stop["code"] = EXIT_TIMEOUT if signum == signal.SIGUSR1 else EXIT_INTERRUPTED
            stop["signum"] = signum
        if compiling["now"]:
            raise KeyboardInterrupt(stop["why"])

    previous_hook = sys.unraisablehook

    def on_unraisable(unraisable) -> None:
        # An interrupt raised where Python cannot propagate it (an at-fork callback while a
        # printer forks) is lost and printed as a traceback: deliver it again instead, so it
        # lands in the compile once that callback has returned.
        if isinstance(unraisable.exc_value, KeyboardInterrupt) and stop:
            import _thread

            stop["lost"] = True
            # From a bare thread, not waited for: a signal this thread sent itself would be
            # handled before the call returned, still inside the callback.
            _thread.start_new_thread(os.kill, (os.getpid(), stop["signum"]))
            return
        previous_hook(unraisable)

    sys.unraisablehook = on_unraisable

    def committed() -> bool:
        return job.output is not None and Path(job.output).absolute() in writer.COMMITTED

    for sig in _STOP_SIGNALS:
        signal.signal(sig, on_signal)
    try:
        # Loading the model and importing TVM (which imports torch when it is installed) run
        # native module initialisers: a KeyboardInterrupt raised inside one (torch's pybind11
        # init) aborts the whole process. An interrupt there is noted and raised just after.
        compiling["now"] = False
        try:
            signal.pthread_sigmask(signal.SIG_UNBLOCK, _STOP_SIGNALS)
            apply_memory_limit(job.limits.memory_limit)
            from tvm_explorer.frontends import load_any, pin_inputs

            if job.sass:
                from tvm_explorer.sass.build import check_sass_request

                check_sass_request(job.sass, job.target)  # missing tools fail before the compile
            tune = _tune_request(job)
            if tune is not None and tune.trials > 0:
                from tvm_explorer.tuning.pipeline import require_metaschedule

                require_metaschedule()
            model = load_any(job.model)  # a bad file fails fast (a .tflite before TVM is imported)
            model = pin_inputs(model, list(job.input_shapes))
            from tvm_explorer.app.numerics_step import prepare as prepare_numerics

            numerics = prepare_numerics(job, model)  # bad --inputs/--reference fail here
            from tvm_explorer.app.compile import compile_model
            from tvm_explorer.app.requests import profile_request
            from tvm_explorer.capture.parallel_print import ENV_WORKERS

            # This process only compiles: it may fork printers onto idle cores (the Python
            # API prints inline unless asked: a host program's threads make forking unsafe).
            os.environ.setdefault(ENV_WORKERS, "auto")
            from tvm_explorer.cli.progress_display import progress_display

            compiling["now"] = True
            if stop:
                raise KeyboardInterrupt(stop["why"])
            with progress_display(job.progress if job.fill_spans else "none") as on_progress:
                result = compile_model(
                    model,
                    job.output if job.fill_spans else None,
                    job.target,
                    fill_spans=job.fill_spans,
                    exact_origins=job.exact_origins,
                    schedule_records=job.schedule_records,
                    on_progress=on_progress,
                    profile=profile_request(job),
                    after_build=numerics.after_build if numerics else None,
                    after_build_steps=1 if numerics else 0,
                    pipeline=job.pipeline,
                    sass=job.sass,
                    tune=tune,
                )
        finally:
            compiling["now"] = False
    except BaseException as err:  # noqa: BLE001 - every way out gets one message
        if stop or isinstance(err, KeyboardInterrupt):
            # An interrupt may also surface as a TVM error raised around a Python callback.
            why = stop.get("why", "interrupted")
            return fail(_stopped_message(job, why, committed()), stop.get("code", EXIT_INTERRUPTED))
        from tvm_explorer.supervise import memlimit

        # A device's fault is the device's, whatever words TVM put in it ("bad_alloc" for a
        # length it was sent): remote/relay.py bounds what a device's answer may make us hold.
        if not isinstance(err, (KeyboardInterrupt, SystemExit, RemoteError)) and memlimit.hit_limit(
            err, job.limits.memory_limit
        ):
            return fail(memlimit.message(err, job.limits.memory_limit, job.model))
        if isinstance(err, ExplorerError):
            return fail_with(err)
        if isinstance(err, SystemExit):
            raise
        import traceback

        traceback.print_exc()
        return fail(
            f"{job.model}: internal error ({type(err).__name__}: {err}); no bundle was written; please report this"
        )
    for sig in _STOP_SIGNALS:
        signal.signal(sig, signal.SIG_IGN)  # the bundle is in place: finish the report
    if stop:  # arrived just as the compile finished: it stands, and the user hears of both
        return fail(_stopped_message(job, stop["why"], committed()), stop["code"])
    from tvm_explorer.app.compile_report import compile_report
    from tvm_explorer.frontends import frontend_of

    for line in compile_report(job, result, frontend_of(model).unit, numerics):
        print(line)
    return 0


def _tune_request(job: CompileJob):
    from tvm_explorer.tuning.request import tune_request

    t = job.tune
    if t.trials is None:
        return tune_request(None, t.database, t.only, t.builder_timeout, job.target, job.output)
    from tvm_explorer.app.requests import remote_request

    remote = remote_request(job)
    no_gpu = None
    if job.target.split()[:1] == ["cuda"] and t.trials > 0 and remote is None:
        from tvm_explorer.costs.gpu import NO_GPU, cuda_plan

        reason = cuda_plan()[1]
        no_gpu = reason and (reason.removeprefix(NO_GPU).strip(" ()") or "no CUDA GPU on this machine")
    return tune_request(t.trials, t.database, t.only, t.builder_timeout, job.target, job.output, remote, no_gpu)


def run_compile_job(job: CompileJob) -> int:
    """Compile in a child process so that a crash inside TVM is reported, not inherited, and
    a compile that hangs (``--timeout``) or ignores an interrupt can be stopped."""
    if not job.output and job.fill_spans:
        return fail("compile: -o/--output BUNDLE is required (unless --no-spans)")
    if job.output and job.fill_spans:
        from tvm_explorer.bundle.writer import check_destination

        try:  # before anything is compiled: only a bundle the tool wrote is replaced
            check_destination(job.output, (job.model,))
        except ExplorerError as err:
            return fail(str(err))
    try:  # --tune's flags, before anything is compiled
        _tune_request(job)
    except ExplorerError as err:
        return fail_with(err)
    from tvm_explorer.app.requests import remote_request

    try:  # remote flags and the cross compiler, before anything is compiled
        remote_request(job)
    except ExplorerError as err:
        return fail_with(err)
    if job.in_process or not hasattr(os, "fork"):
        return _compile_in_this_process(job)
    from tvm_explorer.bundle.writer import COMMIT_CLAIMS, COMMIT_GUARDS
    from tvm_explorer.supervise.supervisor import Work, run_supervised

    work = Work(subject=job.model, target=job.target, output=job.output)
    return run_supervised(lambda: _compile_in_this_process(job), job.limits, work, COMMIT_GUARDS, COMMIT_CLAIMS)

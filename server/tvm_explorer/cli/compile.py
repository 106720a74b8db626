"""``tvm-explorer compile MODEL -o BUNDLE``: compile in a supervised child process
(``supervise.supervisor``), with progress, costs and numerics, and report the bundle."""

from __future__ import annotations

import argparse
import os
import signal
import sys
from pathlib import Path

from tvm_explorer.cli.options import (
    DEFAULT_TIMEOUT,
    add_pipeline_option,
    add_trust_option,
    apply_memory_limit,
    default_memory_limit,
    exit_code_of,
    memory_limit_argument,
    seconds_argument,
    trust_from_args,
)
from tvm_explorer.errors import EXIT_INTERRUPTED, EXIT_TIMEOUT, ExplorerError, RemoteError
from tvm_explorer.errors import fail as _fail
from tvm_explorer.frontends.input_shapes import parse_input_shape
from tvm_explorer.supervise.supervisor import STOP_SIGNALS as _STOP_SIGNALS


def add_parser(sub) -> None:
    p = sub.add_parser("compile", help="compile a model into an explorer bundle")
    p.add_argument(
        "model",
        help="the model: .tflite, .onnx, .pt2 (a saved torch.export program) or FILE.py:FACTORY "
        "(a tvm.relax.frontend.nn model; FILE.py is code and is run)",
    )
    p.add_argument("-o", "--output", help="bundle directory to write")
    p.add_argument(
        "--target",
        default="c",
        help="c (default), llvm or cuda; 'llvm -mtriple=TRIPLE [-mcpu=CPU]' builds for another machine (--rpc)",
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
    p.add_argument(
        "--timeout",
        type=seconds_argument,
        default=DEFAULT_TIMEOUT,
        metavar="SECONDS",
        help=f"stop a compile that runs longer (default {DEFAULT_TIMEOUT:g}; 0: never)",
    )
    p.add_argument(
        "--memory-limit",
        type=memory_limit_argument,
        default=default_memory_limit(),
        metavar="GIB",
        help="address-space limit of the compile (default: 3/4 of the memory, at least 4 GiB; 0: none)",
    )
    p.add_argument(
        "--progress",
        choices=("auto", "bar", "json", "none"),
        default="auto",
        help="progress: a bar on a terminal (auto, the default), JSON lines on stdout (json), or none",
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
        type=parse_input_shape,
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
        help="with --target llvm: tune the fused kernels with MetaSchedule, TRIALS candidates in all "
        "(0: apply the database only); kernels the database already knows are reused, not re-tuned "
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
        help="seconds a candidate may take to build (default 600: each builder worker imports TVM's "
        "tensor intrinsics first, 30-40 s on a loaded machine; MetaSchedule's own default of 30 fails them)",
    )
    add_trust_option(p)
    p.add_argument("--in-process", action="store_true", help=argparse.SUPPRESS)
    from tvm_explorer.cli.costs import add_profile_options
    from tvm_explorer.cli.numerics import add_compile_options

    add_profile_options(p)
    add_compile_options(p)
    p.set_defaults(run=_run_compile)


def _stopped_message(args, why: str, committed: bool) -> str:
    if committed:
        return f"{why} after the bundle was written; {args.output} is complete"
    return f"{why}; no bundle was written (a previous bundle is unchanged)"


def _compile_in_this_process(args) -> int:
    from tvm_explorer.bundle import writer

    trust_from_args(args)

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
                f"{args.model}: compile did not finish within {args.timeout:g} s (--timeout)"
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
        return bool(args.output) and Path(args.output).absolute() in writer.COMMITTED

    for sig in _STOP_SIGNALS:
        signal.signal(sig, on_signal)
    try:
        # Loading the model and importing TVM (which imports torch when it is installed) run
        # native module initialisers: a KeyboardInterrupt raised inside one (torch's pybind11
        # init) aborts the whole process. An interrupt there is noted and raised just after.
        compiling["now"] = False
        try:
            signal.pthread_sigmask(signal.SIG_UNBLOCK, _STOP_SIGNALS)
            apply_memory_limit(args.memory_limit)
            from tvm_explorer.frontends import load_any, pin_inputs

            if getattr(args, "sass", None):
                from tvm_explorer.sass.build import check_sass_request

                check_sass_request(args.sass, args.target)  # missing tools fail before the compile
            tune = _tune_request(args)
            if tune is not None and tune.trials > 0:
                from tvm_explorer.tuning.pipeline import require_metaschedule

                require_metaschedule()
            model = load_any(args.model)  # a bad file fails fast (a .tflite before TVM is imported)
            model = pin_inputs(model, getattr(args, "input_shape", None) or [])
            from tvm_explorer.cli.numerics import prepare as prepare_numerics

            numerics = prepare_numerics(args, model)  # bad --inputs/--reference fail here
            from tvm_explorer.app.compile import compile_model
            from tvm_explorer.capture.parallel_print import ENV_WORKERS
            from tvm_explorer.cli.costs import profile_request

            # This process only compiles: it may fork printers onto idle cores (the Python
            # API prints inline unless asked: a host program's threads make forking unsafe).
            os.environ.setdefault(ENV_WORKERS, "auto")
            from tvm_explorer.cli.progress_display import progress_display

            compiling["now"] = True
            if stop:
                raise KeyboardInterrupt(stop["why"])
            with progress_display("none" if args.no_spans else args.progress) as on_progress:
                result = compile_model(
                    model,
                    None if args.no_spans else args.output,
                    args.target,
                    fill_spans=not args.no_spans,
                    exact_origins=args.exact_origins,
                    schedule_records=not args.no_schedule_records,
                    on_progress=on_progress,
                    profile=profile_request(args),
                    after_build=numerics.after_build if numerics else None,
                    after_build_steps=1 if numerics else 0,
                    pipeline=args.pipeline,
                    sass=getattr(args, "sass", None),
                    tune=tune,
                )
        finally:
            compiling["now"] = False
    except BaseException as err:  # noqa: BLE001 - every way out gets one message
        if stop or isinstance(err, KeyboardInterrupt):
            # An interrupt may also surface as a TVM error raised around a Python callback.
            why = stop.get("why", "interrupted")
            return _fail(_stopped_message(args, why, committed()), stop.get("code", EXIT_INTERRUPTED))
        from tvm_explorer.supervise import memlimit

        # A device's fault is the device's, whatever words TVM put in it ("bad_alloc" for a
        # length it was sent): remote/relay.py bounds what a device's answer may make us hold.
        if not isinstance(err, (KeyboardInterrupt, SystemExit, RemoteError)) and memlimit.hit_limit(
            err, args.memory_limit
        ):
            return _fail(memlimit.message(err, args.memory_limit, args.model))
        if isinstance(err, ExplorerError):
            return _fail(str(err), exit_code_of(err))
        if isinstance(err, SystemExit):
            raise
        import traceback

        traceback.print_exc()
        return _fail(
            f"{args.model}: internal error ({type(err).__name__}: {err}); no bundle was written; please report this"
        )
    for sig in _STOP_SIGNALS:
        signal.signal(sig, signal.SIG_IGN)  # the bundle is in place: finish the report
    if stop:  # arrived just as the compile finished: it stands, and the user hears of both
        return _fail(_stopped_message(args, stop["why"], committed()), stop["code"])
    if args.no_spans:
        print(
            f"{args.model}: compiled for {args.target} with stock TVM (span filling off); "
            "nothing recorded, no bundle written"
        )
        return 0
    bundle = result.bundle
    print(f"Bundle written: {bundle}")
    print(f"  {result.passes} passes recorded, {result.documents} documents")
    for kind, cov in sorted(result.coverage.items()):
        print(f"  generated {kind}: {cov['attributed']}/{cov['units']} computing lines attributed")
    from tvm_explorer.cli.costs import report
    from tvm_explorer.frontends import frontend_of

    unit = frontend_of(model).unit
    from tvm_explorer.cli.memory import report as memory_report

    memory = memory_report(result.memory, result.memory_failure, bundle)
    from tvm_explorer.cli.tuning import compile_report

    tuning = compile_report(result.tuning, bundle)
    for line in [*report(result.costs, unit), *memory, *tuning, *(numerics.report() if numerics else ())]:
        print(line)
    print("Open it in an editor with the TVM Explorer language server (VS Code: docs/vscode.md):")
    print(f"  code {bundle}")
    code = {"c": "code/module.c", "cuda": "code/device.cu"}.get(args.target)
    if code:
        print(f"Ask where a line came from:\n  tvm-explorer origins {bundle} {code}:LINE")
    return 0


def _tune_request(args):
    from tvm_explorer.tuning.request import tune_request

    return tune_request(
        getattr(args, "tune", None),
        getattr(args, "tuning_db", None),
        getattr(args, "tune_only", None),
        getattr(args, "tune_builder_timeout", None),
        args.target,
        args.output,
    )


def _run_compile(args) -> int:
    """Compile in a child process so that a crash inside TVM is reported, not inherited, and
    a compile that hangs (``--timeout``) or ignores an interrupt can be stopped."""
    if not args.output and not args.no_spans:
        return _fail("compile: -o/--output BUNDLE is required (unless --no-spans)")
    if args.output and not args.no_spans:
        from tvm_explorer.bundle.writer import check_destination

        try:  # before anything is compiled: only a bundle the tool wrote is replaced
            check_destination(args.output, (args.model,))
        except ExplorerError as err:
            return _fail(str(err))
    try:  # --tune's flags, before anything is compiled
        _tune_request(args)
    except ExplorerError as err:
        return _fail(str(err), exit_code_of(err))
    from tvm_explorer.cli.costs import remote_request

    try:  # remote flags and the cross compiler, before anything is compiled
        remote_request(args)
    except ExplorerError as err:
        return _fail(str(err), exit_code_of(err))
    if args.in_process or not hasattr(os, "fork"):
        return _compile_in_this_process(args)
    from tvm_explorer.bundle.writer import COMMIT_CLAIMS, COMMIT_GUARDS
    from tvm_explorer.supervise.supervisor import run_supervised

    return run_supervised(args, _compile_in_this_process, COMMIT_GUARDS, COMMIT_CLAIMS)

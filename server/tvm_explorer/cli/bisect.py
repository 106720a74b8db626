"""``tvm-explorer bisect MODEL``: parse the command line into a BisectJob, run it in a
supervised child (``bisect.run``: compile, recording every pass, then find the first pass after
which the model's results change beyond the numerics thresholds) and print its report."""

from __future__ import annotations

import argparse
import json
import os

from tvm_explorer.app.jobs import BisectJob
from tvm_explorer.cli.options import (
    add_in_process_option,
    add_inputs_option,
    add_limit_options,
    add_pipeline_option,
    add_progress_option,
    add_reference_option,
    add_target_option,
    add_trust_option,
    apply_trust,
    fail,
    fail_with,
    job_from,
)
from tvm_explorer.errors import EXIT_CRASH, EXIT_INTERRUPTED, ExplorerError


def add_parser(sub) -> None:
    """``tvm-explorer bisect``."""
    p = sub.add_parser("bisect", help="find the pass after which the model computes something else")
    p.add_argument("model", help="the model: .tflite, .onnx or .pt2")
    add_target_option(p, "llvm", "llvm (default) or c")
    add_pipeline_option(p, "your Relax pipeline (as for compile)")
    add_inputs_option(p, "run on these inputs (default: seeded random)", metavar="X.npz")
    add_reference_option(
        p,
        "compare with this model of the same graph run by its own engine (a .tflite "
        "by the LiteRT interpreter, a .onnx by onnxruntime, a .pt2 by eager PyTorch; "
        "default: the imported module built without optimizations)",
    )
    p.add_argument(
        "-o",
        "--output",
        metavar="BUNDLE",
        help="also write the bundle (with bisect.json), so the culprit's diff can be opened",
    )
    p.add_argument("--json", action="store_true")
    add_progress_option(
        p,
        help="progress of the compile and of each build of the search: a bar on a "
        "terminal (auto), JSON lines on stdout (json), or none",
    )
    add_limit_options(p, timeout_help="stop a bisection that runs longer (default 1800; 0: never)", memory=False)
    add_trust_option(p)
    add_in_process_option(p)
    p.set_defaults(run=run)


def job_of(args: argparse.Namespace) -> BisectJob:
    """The BisectJob of ``bisect``'s parsed command line."""
    return job_from(BisectJob, args)


def run(args: argparse.Namespace) -> int:
    """``tvm-explorer bisect``."""
    return run_bisect_job(job_of(args))


def run_bisect_job(job: BisectJob) -> int:
    """``bisect`` in a supervised child, like ``compile``: a crash inside TVM (while building or
    running a snapshot), a ``--timeout`` or an interrupt ends with one message."""
    if job.in_process or not hasattr(os, "fork"):
        return _run_here(job)
    from tvm_explorer.bundle.writer import COMMIT_CLAIMS, COMMIT_GUARDS
    from tvm_explorer.supervise.supervisor import Work, run_supervised

    work = Work(subject=job.model, target=job.target, output=job.output, activity=("bisect", "bisecting"))
    return run_supervised(lambda: _bisect_child(job), job.limits, work, COMMIT_GUARDS, COMMIT_CLAIMS)


def _bisect_child(job: BisectJob) -> int:
    import signal

    def stop(signum, _frame):
        raise KeyboardInterrupt(signal.Signals(signum).name)

    signal.signal(signal.SIGTERM, stop)  # SIGUSR1 (the timeout) keeps its default: the end
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT, signal.SIGTERM, signal.SIGUSR1})
    return _run_here(job)


def _run_here(job: BisectJob) -> int:
    """The command in this process: compile, search, report."""
    from tvm_explorer.bisect.report import format_report
    from tvm_explorer.bisect.run import bisect_model
    from tvm_explorer.cli.progress_display import progress_display

    apply_trust(job.trust_pickle)
    try:
        with progress_display(job.progress) as on_progress:
            data = bisect_model(job, on_progress)
    except ExplorerError as err:
        return fail_with(err)
    except KeyboardInterrupt:
        return fail(
            "interrupted; no bisect report" + (f" and no bundle ({job.output} is unchanged)" if job.output else ""),
            EXIT_INTERRUPTED,
        )
    except MemoryError:
        return fail(f"{job.model}: bisect ran out of memory")
    except Exception as err:  # noqa: BLE001 - one message, the traceback only for a report
        import traceback

        traceback.print_exc()
        return fail(
            f"{job.model}: internal error in bisect ({type(err).__name__}: {err}); please report this", EXIT_CRASH
        )
    if job.json:
        print(json.dumps(data, indent=1))
    else:
        for line in format_report(data, job.output):
            print(line)
    return 0

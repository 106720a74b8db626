"""``tvm-explorer reduce MODEL -o SMALL``: shrink a model that breaks TVM to the smallest
sub-model that breaks it the same way (docs/reduce.md), with its report and a reproducer."""

from __future__ import annotations

import argparse
import json
import os
import sys

from tvm_explorer.app.jobs import ReduceJob
from tvm_explorer.cli.options import (
    add_limit_options,
    add_pipeline_option,
    add_progress_option,
    add_reference_option,
    add_target_option,
    fail,
    job_from,
)
from tvm_explorer.errors import EXIT_INTERRUPTED, ExplorerError

DEFAULT_TIMEOUT = 300.0


def add_parser(sub) -> None:
    p = sub.add_parser("reduce", help="shrink a model that breaks TVM to a minimal one that breaks it the same way")
    p.add_argument("model", help="the failing model: .tflite or .onnx")
    p.add_argument("-o", "--output", required=True, help="the reduced model to write (same kind as MODEL)")
    p.add_argument(
        "--until",
        choices=("import", "compile", "crash", "hang", "diverge", "culprit"),
        help="which failure to keep (default: the one the model has; diverge compares each probe with the "
        "reference per layer, culprit runs bisect on every probe)",
    )
    add_target_option(p, "c", "c (default), llvm or cuda")
    add_pipeline_option(p, "compile with your own Relax pipeline (as compile)")
    add_reference_option(
        p,
        "with --until diverge: compare with this model of the same graph (as compile --numerics "
        "--reference), cut the same way; written as SMALL.reference.EXT",
    )
    p.add_argument("--jobs", type=int, default=os.cpu_count() or 1, help="probes at once (default: all cores)")
    add_limit_options(
        p,
        DEFAULT_TIMEOUT,
        timeout_help=f"time limit of each probe; a probe over it hangs (default {DEFAULT_TIMEOUT:g}; 0: never)",
        memory_help="address-space limit of each probe (default: 3/4 of the memory, at least 4 GiB; 0: none)",
    )
    p.add_argument("--max-probes", type=int, default=1000, help="stop the search after this many probes")
    add_progress_option(
        p, ("auto", "json", "none"), "progress: a line on a terminal (auto), JSON lines on stdout (json), or none"
    )
    p.set_defaults(run=run)


def job_of(args: argparse.Namespace) -> ReduceJob:
    """The ReduceJob of ``reduce``'s parsed command line."""
    return job_from(ReduceJob, args)


def _display(mode: str):
    from tvm_explorer.cli.progress_display import resolve_mode

    mode = resolve_mode(mode, sys.stderr)
    if mode == "json":

        def emit(event: dict) -> None:
            sys.stdout.write(json.dumps(event) + "\n")
            sys.stdout.flush()

        return emit
    if mode == "bar":

        def line(event: dict) -> None:
            sys.stderr.write(
                f"\rreduce: {event['probes']} probes, trying {event['size']} of {event['original']}, "
                f"best {event['best']}   "
            )
            sys.stderr.flush()
            if event["phase"] == "done":
                sys.stderr.write("\n")

        return line
    return None


def run(args: argparse.Namespace) -> int:
    """``tvm-explorer reduce``."""
    return run_reduce_job(job_of(args))


def run_reduce_job(job: ReduceJob) -> int:
    """Reduce, and say where the reduced model, its report and its reproducer are."""
    from tvm_explorer.reduce.reducer import NothingToReduce, reduce_job

    if job.jobs < 1:
        return fail(f"--jobs {job.jobs}: give at least 1")
    if not os.path.isfile(job.model):
        return fail(f"{job.model}: no such model file")
    import signal

    def stop(signum, _frame):
        # Ctrl-C, and SIGTERM (the editor's Cancel), stop the search: the best so far stays, and a
        # second signal cannot break the writing of it.
        for sig in (signal.SIGINT, signal.SIGTERM):
            signal.signal(sig, signal.SIG_IGN)
        raise KeyboardInterrupt(signal.Signals(signum).name)

    # Both are ours even where SIGINT came in ignored (a job started in the background by a
    # non-interactive shell), as compile's supervisor makes them.
    signal.signal(signal.SIGINT, stop)
    signal.signal(signal.SIGTERM, stop)
    try:
        done = reduce_job(job, _display(job.progress))
    except NothingToReduce as err:
        print(str(err))
        return 0
    except ExplorerError as err:  # Flaky too
        return fail(str(err))
    except KeyboardInterrupt as err:
        best = getattr(err, "reduction", None)
        if best is None:
            return fail("interrupted; nothing written", EXIT_INTERRUPTED)
        return fail(
            f"interrupted after {best.probes} probes; the best so far ({len(best.kept)} of "
            f"{best.original_ops}) is in {best.output} (partial), with {best.report} and {best.repro}",
            EXIT_INTERRUPTED,
        )
    state = "1-minimal" if done.minimal else f"not shown 1-minimal: {done.why}"
    print(
        f"Reduced {job.model}: {done.original_ops} → {len(done.kept)} ({state}), {done.probes} probes in "
        f"{done.seconds:.1f} s"
    )
    if done.all_ops is not None and done.all_ops != (done.original_ops, len(done.kept)):
        print(f"  over all subgraphs: {done.all_ops[0]} → {done.all_ops[1]} (the subgraphs nothing runs dropped)")
    print(f"  failure: {done.original.describe()}")
    print(f"  model:   {done.output}")
    print(f"  report:  {done.report}")
    print(f"  repro:   {done.repro}  (stock TVM; its header lists what it imports)")
    if done.reference:
        print(f"  reference: {done.reference}")
    if done.bundle:
        print(f"  bundle:  {done.bundle}")
    elif done.bundle_note:
        print(f"  bundle:  none ({done.bundle_note})")
    return 0

"""``reduce_model``: from a model that breaks TVM to the smallest sub-model that breaks it the
same way (docs/reduce.md). Model-kind specifics are the frontend's ``subgraph_writer``."""

from __future__ import annotations

import os
import shutil
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TypedDict

from tvm_explorer.app.jobs import ReduceJob
from tvm_explorer.errors import ExplorerError
from tvm_explorer.frontends import frontend_for
from tvm_explorer.frontends.base import Frontend, GraphOp, SubgraphWriter
from tvm_explorer.inert import markdown as md
from tvm_explorer.reduce.output_rules import (
    check_files,
    check_outputs,
    files_of,
    partial_name,
    record_line,
    write_model,
)
from tvm_explorer.reduce.runner import Outcome, Prober, signature
from tvm_explorer.reduce.search import Stopped, ddmin
from tvm_explorer.whole_files import write_whole

UNTIL = ("import", "compile", "crash", "hang", "diverge", "culprit")
NOT_YET: tuple[str, ...] = ()


class NothingToReduce(ExplorerError):
    """The model does not fail (the way asked): nothing is written."""


class Flaky(ExplorerError):
    """The failure did not happen again on a re-run."""


class _SearchState(TypedDict):
    """The best set of operators so far, and the size of the sets being tried."""

    best: list[int]
    size: int


@dataclass
class Reduction:
    output: str
    report: str
    repro: str
    original_ops: int
    kept: list[int]
    probes: int
    seconds: float
    minimal: bool
    why: str
    partial: bool
    original: Outcome
    reduced: Outcome | None
    reference: str | None = None
    bundle: str | None = None
    bundle_note: str = ""
    all_ops: tuple[int, int] | None = None
    """Operators over all subgraphs, original → reduced (model kinds with loop bodies)."""


class ReductionInterrupted(KeyboardInterrupt):
    """A Ctrl-C during the search, after the best so far was written (``reduction``)."""

    def __init__(self, reduction: Reduction):
        super().__init__()
        self.reduction = reduction


def _matches_until(outcome: Outcome, until: str | None) -> bool:
    if until is None:
        return outcome.failed
    if until == "import":
        return outcome.kind == "error" and outcome.stage in ("load", "import")
    if until == "compile":
        return outcome.kind in ("error", "oom") and outcome.stage == "compile"
    if until == "diverge":
        return outcome.kind == "diverge" and bool(outcome.opcode)
    return outcome.kind == until


def reduce_job(job: ReduceJob, on_progress: Callable[[dict], None] | None = None) -> Reduction:
    """``tvm-explorer reduce``: ``reduce_model`` of the job (its limits hold for each probe)."""
    return reduce_model(
        job.model,
        job.output,
        until=job.until,
        target=job.target,
        pipeline=job.pipeline,
        reference=job.reference,
        jobs=job.jobs,
        timeout=job.limits.timeout,
        memory_limit=job.limits.memory_limit,
        max_probes=job.max_probes,
        on_progress=on_progress,
    )


def reduce_model(
    model: str,
    output: str,
    *,
    until: str | None = None,
    target: str = "c",
    pipeline: str | None = None,
    reference: str | None = None,
    bundle: bool = True,
    jobs: int = 1,
    timeout: float = 300,
    memory_limit: float = 0,
    max_probes: int = 1000,
    on_progress: Callable[[dict], None] | None = None,
) -> Reduction:
    """Reduce ``model`` into ``output`` (+ ``.report.md``, ``.repro.py``). Raises
    ``NothingToReduce`` (the model does not fail), ``Flaky``, or ExplorerError; a
    KeyboardInterrupt while searching writes the best so far as ``*.partial.*`` and is raised
    again with ``.reduction`` set."""
    frontend = frontend_for(model)
    writer = frontend.subgraph_writer
    if writer is None:
        raise ExplorerError(
            f"{model}: reduce reads .tflite and .onnx models; a {frontend.suffix} ({frontend.kind}) model "
            "cannot be cut into sub-models yet"
        )
    if until in NOT_YET:
        raise ExplorerError(f"reduce --until {until} is not supported yet")
    if until in ("culprit", "diverge") and target not in ("llvm", "c"):
        raise ExplorerError(f"reduce --until {until} runs the model here: use --target llvm or c (not {target})")
    if reference is not None:
        if until != "diverge":
            raise ExplorerError("--reference is only used with --until diverge")
        if not os.path.isfile(reference):
            raise ExplorerError(f"{reference}: no such reference model")
        if os.path.splitext(reference)[1].lower() != frontend.suffix:
            raise ExplorerError(f"{reference}: the reference must be a {frontend.suffix} model like {model}")
    if os.path.splitext(output)[1].lower() != frontend.suffix:
        raise ExplorerError(f"{output}: the reduced model is a {frontend.suffix} like {os.path.basename(model)}")
    check_outputs(model, reference, output)  # before the search: a refusal costs nothing
    ops = writer.ops(model)
    if not ops:
        raise NothingToReduce(f"{model}: the main graph has no operators; nothing to reduce")
    started = time.monotonic()
    work = tempfile.mkdtemp(prefix="tvm-explorer-reduce-")
    stage_only = until if until in ("import", "culprit", "diverge") else None
    prober = Prober(
        model,
        writer,
        work,
        target=target,
        pipeline=pipeline,
        timeout=timeout,
        memory_limit=memory_limit,
        jobs=jobs,
        until=stage_only,
        reference=reference,
    )
    state: _SearchState = {"best": [op.index for op in ops], "size": len(ops)}

    def progress(phase: str) -> None:
        if on_progress is not None:
            on_progress(
                {
                    "event": "reduce",
                    "phase": phase,
                    "probes": prober.probes,
                    "original": len(ops),
                    "size": state["size"],
                    "best": len(state["best"]),
                }
            )

    try:
        progress("original")
        # The original twice (at once when jobs allow): a failure that does not happen again
        # is flaky.
        ran = prober.run([None, None] if jobs > 1 else [None])
        runs = [r for r in ran if r is not None]  # all of them: nothing stops a run without stop_when
        first = next((r for r in runs if _matches_until(r, until)), runs[0])
        if not _matches_until(first, until):
            if first.failed:
                raise ExplorerError(f"{model}: TVM fails on it, but not at --until {until}: {first.describe()}")
            raise NothingToReduce(f"{model}: TVM does not fail on it (nothing to reduce); nothing written")
        again = next((r for r in runs if r is not first), None) or prober.run([None])[0]
        assert again is not None  # as above
        if signature(again, until) != signature(first, until):
            raise Flaky(
                f"{model}: the failure is flaky: one run: {first.describe()}; another: {again.describe()}; "
                "nothing written"
            )
        wanted = signature(first, until)
        if first.stage == "import" and stage_only is None and first.kind == "error":
            prober.spec["until"] = "import"  # the failure is in the import: probes stop there

        def first_failing(candidates):
            if prober.probes >= max_probes:
                raise Stopped(f"the probe budget ({max_probes}) ran out")
            for c in candidates:
                state["size"] = len(c)
                break
            progress("search")
            results = prober.run(list(candidates), stop_when=lambda o: signature(o, until) == wanted)
            for i, r in enumerate(results):
                if r is not None and signature(r, until) == wanted:
                    return i
            return None

        def on_best(kept):
            state["best"] = list(kept)
            state["size"] = len(kept)
            progress("best")

        hints = [[op.index] for op in ops if first.opcode and op.opcode == first.opcode]
        interrupted = False
        try:
            result = ddmin([op.index for op in ops], first_failing, hints=hints, on_best=on_best)
            kept, minimal, why = result.kept, result.minimal, result.why
        except KeyboardInterrupt:
            interrupted = True
            kept, minimal, why = state["best"], False, "interrupted"
        partial = interrupted or not minimal
        target_path = partial_name(output) if interrupted else output
        reduced = prober.cache.get(frozenset(kept)) if len(kept) < len(ops) else first
        found = _Found(
            model=model,
            writer=writer,
            frontend=frontend,
            ops=ops,
            kept=kept,
            original=first,
            reduced=reduced,
            probes=prober.probes,
            started=started,
            jobs=jobs,
            minimal=minimal,
            why=why,
            partial=interrupted,
            target=target,
            pipeline=pipeline,
            reference=reference,
        )
        done = _write(found, target_path)
        done.partial = partial
        if bundle and not interrupted and until in ("diverge", "culprit"):
            # the reduced model builds (its failure is in the results): its bundle opens in the editor
            progress("bundle")
            done.bundle, done.bundle_note = _bundle(done.output, target, pipeline, done.reference, until, timeout)
            with open(done.report, encoding="utf-8") as fh:
                report_text = fh.read()
            write_whole(done.report, (report_text + outputs_bundle_section(done)).encode("utf-8"), "report")
        if interrupted:
            raise ReductionInterrupted(done)
        progress("done")
        return done
    finally:
        prober.stop_all()
        shutil.rmtree(work, ignore_errors=True)


@dataclass
class _Found:
    """What a search found, for ``_write``: the model and its operators, the ones kept, the
    original and the reduced failure, and how the search went."""

    model: str
    writer: SubgraphWriter
    frontend: Frontend
    ops: list[GraphOp]
    kept: list[int]
    original: Outcome
    reduced: Outcome | None
    probes: int
    started: float  # time.monotonic() when the search started
    jobs: int
    minimal: bool
    why: str
    partial: bool
    target: str
    pipeline: str | None
    reference: str | None


def _write(found: _Found, output: str) -> Reduction:
    """The reduced model (and its cut reference) at ``output``, its report and reproducer."""
    from tvm_explorer.reduce import outputs

    model, writer, kept, reference = found.model, found.writer, found.kept, found.reference
    folder = os.path.dirname(os.path.abspath(output))
    os.makedirs(folder, exist_ok=True)
    check_files(model, reference, output)  # again: the search took a while
    stem = os.path.splitext(output)[0]
    write_model(output, lambda tmp: writer.write(model, kept, tmp))
    reference_out = None
    if reference is not None:
        reference_out = stem + ".reference" + os.path.splitext(output)[1]
        write_model(reference_out, lambda tmp: writer.write(reference, kept, tmp))
    all_ops = (writer.count_ops(model), writer.count_ops(output)) if writer.count_ops else None
    seconds = time.monotonic() - found.started
    report_path, repro_path = stem + ".report.md", stem + ".repro.py"
    reduced = found.reduced
    if reduced is not None and reduced.message:
        reduced = Outcome(**{**reduced.__dict__, "message": _rename_probe(reduced.message, output, reference_out)})
    report_text = outputs.report(
        model=model,
        small=output,
        ops=found.ops,
        kept=kept,
        original=found.original,
        reduced=reduced,
        probes=found.probes,
        seconds=seconds,
        jobs=found.jobs,
        minimal=found.minimal,
        why=found.why,
        partial=found.partial,
        target=found.target,
        pipeline=found.pipeline,
        unit=found.frontend.unit,
        reference=reference_out,
        all_ops=all_ops,
    )
    repro_text = outputs.repro(
        small=output,
        stock_import=writer.stock_import,
        original=found.original,
        target=found.target,
        pipeline=found.pipeline,
    )
    report_text += "\n" + record_line(files_of(output, reference))
    write_whole(report_path, report_text.encode("utf-8"), "report")
    write_whole(repro_path, repro_text.encode("utf-8"), "reproducer")
    return Reduction(
        output,
        report_path,
        repro_path,
        len(found.ops),
        list(kept),
        found.probes,
        seconds,
        found.minimal,
        found.why,
        found.partial,
        found.original,
        reduced,
        reference_out,
        all_ops=all_ops,
    )


def outputs_bundle_section(done: Reduction) -> str:
    if done.bundle is None:
        return f"\n## Bundle\n\nNo bundle: {md.text(done.bundle_note)}.\n"
    name = os.path.basename(done.bundle)
    lines = ["", "## Bundle", "", f"{md.code(name)}: the reduced model compiled by `tvm-explorer compile`"]
    if done.original.kind == "diverge":
        lines[-1] += " with `--numerics --numerics-unfused`: its Numerics view marks the divergent layer"
    lines[-1] += f". Open it in VS Code (TVM Explorer) or run {md.code('tvm-explorer numerics ' + name)}."
    return "\n".join(lines) + "\n"


def _bundle(small, target, pipeline, reference, until, timeout) -> tuple[str | None, str]:
    """``SMALL.bundle``: the product's own compile of the reduced model in a child process (same
    target and pipeline; for diverge with ``--numerics --numerics-unfused`` and the cut
    reference, so the Numerics view shows the divergence). Returns (path or None, why not)."""
    import subprocess

    from tvm_explorer.supervise.child_python import python_module_command

    path = os.path.splitext(small)[0] + ".bundle"
    command = ["compile", small, "-o", path, "--target", target, "--progress", "none"]
    if pipeline:
        command += ["--pipeline", pipeline]
    if until == "diverge" and target in ("llvm", "c"):
        command += ["--numerics", "--numerics-unfused"]
        if reference:
            command += ["--reference", reference]
    try:
        proc = subprocess.run(
            python_module_command("tvm_explorer", *command),
            capture_output=True,
            text=True,
            timeout=timeout or None,
            start_new_session=True,
        )
    except subprocess.TimeoutExpired:
        return None, f"the compile of the reduced model outlived --timeout {timeout:g} s"
    if proc.returncode == 0 and os.path.exists(path):
        return path, ""
    lines = (proc.stderr or proc.stdout).strip().splitlines()
    return None, f"the reduced model did not compile into a bundle ({lines[-1] if lines else proc.returncode})"


def _rename_probe(message: str, output: str, reference: str | None = None) -> str:
    import re

    message = re.sub(r"\S*tvm-explorer-reduce-[^/\s]+/probe\d+\.\w+", output, message)
    # the numerics' reference description names the probe's file by its base name
    if reference:
        message = re.sub(r"\bprobe\d+\.ref\.\w+", os.path.basename(reference), message)
    return re.sub(r"\bprobe\d+\.\w+", os.path.basename(output), message)

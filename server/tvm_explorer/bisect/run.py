"""A whole ``bisect``: compile the model (recording every pass), then search the recorded
passes for the first after which the results change (``report.bisect_compiled``)."""

from __future__ import annotations

import json
import os

from tvm_explorer.app.jobs import BisectJob
from tvm_explorer.bisect.report import bisect_compiled
from tvm_explorer.bundle.sections.bisect import BISECT_FILE
from tvm_explorer.errors import ExplorerError


def bisect_model(job: BisectJob, on_progress=None) -> dict:
    """Compile, search; the bisect report (also written into the bundle with ``job.output``).
    Raises ExplorerError on bad input."""
    from tvm_explorer.frontends import load_any
    from tvm_explorer.numerics.reference import check_same_graph
    from tvm_explorer.runtime.inputs import inputs_for

    model = load_any(job.model)
    if job.target not in ("llvm", "c"):
        raise ExplorerError(
            f"bisect runs the compiled model on this machine's CPU: use --target llvm or c (not {job.target})"
        )
    inputs = inputs_for(model, job.inputs)
    if job.reference:
        if not os.path.isfile(job.reference):
            raise ExplorerError(f"{job.reference}: no such reference model")
        check_same_graph(model, job.reference)
    from tvm_explorer.app.compile import compile_model
    from tvm_explorer.bisect.snapshots import SnapshotRecorder

    recorder = SnapshotRecorder()
    held: dict = {}

    def on_session(session):
        recorder.attach(session)
        held["session"] = session

    def after_build(session, executable):
        held["data"] = bisect_compiled(
            model,
            job.target,
            inputs,
            session,
            recorder,
            job.pipeline,
            job.reference,
            session.writer.passes,
            executable,
        )
        return {BISECT_FILE: json.dumps(held["data"], indent=1)}

    result = compile_model(
        job.model,
        job.output,
        job.target,
        after_build=after_build if job.output else None,
        pipeline=job.pipeline,
        on_session=on_session,
        on_progress=on_progress,
    )
    if "data" not in held:
        held["data"] = bisect_compiled(
            model,
            job.target,
            inputs,
            held["session"],
            recorder,
            job.pipeline,
            job.reference,
            None,
            result.executable,
        )
    return held["data"]

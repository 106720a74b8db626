"""The numerics part of a compile (``--numerics``): checked before, run after the build."""

from __future__ import annotations

import json

from tvm_explorer.app.jobs import CompileJob
from tvm_explorer.bundle.sections.numerics import NUMERICS_FILE, NumericsDocument
from tvm_explorer.errors import ExplorerError


class NumericsStep:
    """The numerics part of one compile: checked before, run after the build."""

    def __init__(self, job: CompileJob, model):
        from tvm_explorer.app.requests import remote_request
        from tvm_explorer.numerics.run import NumericsOptions, check_request

        measure = job.measure
        self.options = NumericsOptions(
            reference=measure.reference,
            inputs=measure.inputs,
            unfused=measure.numerics_unfused,
            pipeline=job.pipeline,
            remote=remote_request(job),
        )
        self.target = job.target
        check_request(model, job.target, self.options)
        self.data: NumericsDocument | None = None
        self.failure: str | None = None

    def after_build(self, session, executable) -> dict:
        """``compile_model``'s hook: ``{"numerics.json": text}``, or nothing if the model
        cannot run (then the bundle is written without numerics and the reason is told)."""
        from tvm_explorer.numerics.run import run_numerics

        if session.progress is not None:
            session.progress.starting(
                "run",
                "numerics: running the model and the reference"
                + (", fused and unfused" if self.options.unfused else ""),
            )
        from tvm_explorer.errors import RemoteError

        try:
            self.data = run_numerics(
                session.model, self.target, executable, session.final_relax, session.origins, self.options
            )
        except RemoteError:
            raise  # a device fault stops the compile: the previous bundle stays
        except ExplorerError as err:
            self.failure = str(err)
            return {}
        return {NUMERICS_FILE: json.dumps(self.data, indent=1)}

    def report(self) -> list[str]:
        """Lines for the compile summary."""
        from tvm_explorer.numerics.run import summary_lines

        if self.data is not None:
            return summary_lines(self.data) + ["  per layer: tvm-explorer numerics BUNDLE"]
        return [f"  numerics not recorded: {self.failure}"]


def prepare(job: CompileJob, model) -> NumericsStep | None:
    """The numerics step if the job asks for one (raises ExplorerError on bad input)."""
    measure = job.measure
    numerics = measure.numerics or measure.numerics_unfused
    if numerics and not job.fill_spans:
        raise ExplorerError("--numerics needs provenance to find each layer's kernel: drop --no-spans")
    if not numerics:
        if measure.reference:
            raise ExplorerError("--reference is only used with --numerics")
        return None
    return NumericsStep(job, model)

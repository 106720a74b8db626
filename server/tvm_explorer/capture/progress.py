"""Progress of a compile, as events for whoever listens (the CLI draws a bar or prints JSON
lines; capture itself knows nothing of terminals).

A compile is a fixed sequence of steps: the import, every top-level pass of TVM's pipeline
(Relax, then TIR), one step per generated source, and writing the bundle. ``plan_steps``
counts the pipeline's passes for a target by compiling a two-operator module through the same
pipeline (a few milliseconds for ``c``, ~0.2 s for ``cuda``): the pass list depends on the
target and the pipeline, not on the model, so "pass n of N" is exact. Runs after the build
(``--profile``, ``--numerics``) are one step each, counted as they start (stage ``run``).

Besides the finished steps, a listener hears when a pass, a codegen step or the writing of the
bundle *starts* (``ProgressEvent.phase == "start"``, ``done`` still the steps finished before
it), so that a display can show what is running — one pass can take minutes on a big model.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import asdict, dataclass

import tvm
from tvm import relax

from tvm_explorer.capture.pipeline_steps import PipelineSteps

STAGES = ("import", "relax", "tune", "tir", "code", "run", "write")


@dataclass(frozen=True)
class ProgressEvent:
    """One finished step: ``done`` of ``total`` steps, in ``stage``, named ``name``; or, with
    ``phase == "start"``, a step that begins now (``done`` steps finished before it)."""

    stage: str
    name: str
    done: int
    total: int
    elapsed: float
    phase: str = "done"

    def to_json(self) -> dict:
        """The event as a JSON object (``--progress json``; the phase is its ``event``)."""
        data = asdict(self)
        del data["phase"]
        return data | {"elapsed": round(self.elapsed, 3)}


Listener = Callable[[ProgressEvent], None]


class Progress:
    """Counts steps of one compile and tells a listener after each."""

    def __init__(self, listener: Listener, total: int):
        self.listener = listener
        self.total = total
        self.done = 0
        self.started = time.monotonic()

    def step(self, stage: str, name: str) -> None:
        """One more step finished (a step past the plan grows the total: never "75 of 74")."""
        self.done += 1
        self.total = max(self.total, self.done)
        self.listener(ProgressEvent(stage, name, self.done, self.total, time.monotonic() - self.started))

    def begin(self, stage: str, name: str) -> None:
        """A step starts now (it is counted when it finishes, by ``step``)."""
        self.listener(
            ProgressEvent(
                stage, name, self.done, max(self.total, self.done + 1), time.monotonic() - self.started, "start"
            )
        )

    def starting(self, stage: str, name: str) -> None:
        """A step that runs for long after the compile (profiling, numerics): counted when it
        starts, so the display says what is running rather than what finished last."""
        self.step(stage, name)

    def finish(self) -> None:
        """The last step (the bundle is written): done == total."""
        self.total = self.done + 1
        self.step("write", "bundle written")

    def writing(self) -> None:
        """The bundle is about to be written (many MB for a big model: a step of its own)."""
        self.total = max(self.total, self.done + 1)
        self.begin("write", "writing the bundle")


def _probe_module():
    """A two-operator Relax module: enough to walk every pass of a pipeline."""
    bb = relax.BlockBuilder()
    x = relax.Var("x", relax.TensorType((1, 8), "float32"))
    with bb.function("main", [x]):
        with bb.dataflow():
            y = bb.emit(relax.op.add(x, x))
            out = bb.emit_output(relax.op.nn.relu(y))
        bb.emit_func_output(out)
    return bb.get()


def plan_steps(target: str) -> int:
    """How many steps a compile for ``target`` takes (see the module docstring); 0 if the
    probe compile fails (the bar then grows as steps arrive)."""
    from tvm_explorer.capture.pipeline import build, generated_sources

    counter = tvm.ir.instrument.pass_instrument(PipelineSteps)()
    try:
        executable = build(_probe_module(), target, [counter])
        sources = len(generated_sources(executable, target))
    except Exception:  # noqa: BLE001 - a plan is a nicety; the real compile reports errors
        return 0
    # import + Relax and TIR passes + the TIR "input" document + one per source + write
    return 1 + counter.steps + 1 + sources + 1

"""A pipeline's steps: the passes it runs inside nothing but passes that only group other
passes (``Sequential``, a pipeline). A pass instrument that counts them, or acts after each,
is a ``PipelineSteps`` (decorated with ``tvm.ir.instrument.pass_instrument``)."""

from __future__ import annotations

CONTAINERS = {"sequential", "_pipeline"}  # passes that only group other passes


class PipelineSteps:
    """Keeps the passes running now and counts the steps; ``after_step`` is called after each."""

    def __init__(self) -> None:
        self.stack: list[str] = []
        self.steps = 0

    def run_before_pass(self, mod, info):
        self.stack.append(info.name)

    def run_after_pass(self, mod, info):
        self.stack.pop()
        if info.name not in CONTAINERS and all(n in CONTAINERS for n in self.stack):
            self.steps += 1
            self.after_step(mod, info)

    def after_step(self, mod, info) -> None:
        """What the instrument does after a step (nothing: it counts them)."""

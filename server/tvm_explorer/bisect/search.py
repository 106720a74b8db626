"""Finding the culprit pass (docs/numerics.md, "Which pass broke it").

1. Relax: snapshots are compared with the baseline (the imported module built the same way,
   or the reference interpreter with ``--reference``) by the model's outputs, with the
   numerics thresholds. Bisection assumes a result that diverged stays diverged (later passes
   do not repair it): the culprit is the first snapshot that diverges after one that does not.
   Snapshots the minimal lowering cannot build are skipped over.
2. TIR: if no Relax snapshot diverges but the real build does, rebuilds with sets of TIR passes
   disabled find the one whose absence removes the divergence (halving the set; a set whose
   absence breaks the build is split further).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from tvm_explorer.bisect.snapshots import Run, Snapshot, SnapshotRecorder, run_executable, run_full, run_snapshot
from tvm_explorer.errors import ExplorerError
from tvm_explorer.frontends.model import Layer, Model
from tvm_explorer.numerics.compare import Error, compare, mismatch, worst
from tvm_explorer.numerics.reference import ReferenceRun


def _brief(err: BaseException) -> str:
    return f"{type(err).__name__}: {' '.join(str(err).split())[:200]}"


@dataclass
class Evaluated:
    """One build's result against the baseline."""

    index: int
    name: str
    stage: str
    error: Error | None  # None: could not be built or run
    run: Run | None = field(default=None, repr=False)  # None exactly when ``error`` is
    problem: str | None = None

    def observed(self) -> dict[tuple[int, int], np.ndarray]:
        """The layer outputs this build's run observed (a build that ran: ``error`` is set)."""
        assert self.run is not None, f"{self.name}: not built, nothing observed"
        return self.run.observation.outputs


class Bisector:
    """Builds and runs snapshots on demand (each once) and compares them with the baseline."""

    def __init__(
        self,
        model: Model,
        target: str,
        inputs: dict,
        origins,
        recorder: SnapshotRecorder,
        final_relax,
        pipeline,
        reference: ReferenceRun | None,
        quant: dict,
        announce=None,
        executable=None,
    ):
        self.model, self.target, self.inputs, self.origins = model, target, inputs, origins
        self.snapshots: list[Snapshot] = recorder.snapshots
        self.tir_passes = list(recorder.tir_passes)
        self.final_relax, self.pipeline = final_relax, pipeline
        self.reference, self.quant = reference, quant
        self.output_names = [t.name for t in model.subgraphs[0].outputs] if model.subgraphs else []
        self.relax_done: dict[int, Evaluated] = {}
        self.tir_done: list[Evaluated] = []
        self.announce = announce  # called with what is built next (progress), if given
        self.executable = executable  # the recorded compile's own build, if at hand
        self._real: Evaluated | None = None
        self.baseline = self._baseline()

    # -- baseline and errors -------------------------------------------------------------
    def _baseline(self) -> list[np.ndarray]:
        if self.reference is not None:
            missing = [n for n in self.output_names if n not in self.reference.tensors]
            if missing:
                raise ExplorerError(f"{self.reference.path}: has no output tensor '{missing[0]}'")
            return [self.reference.tensors[n] for n in self.output_names]
        first = self.relax(0)
        if first.run is None:
            raise ExplorerError(
                f"{self.model.path}: the imported module cannot be built and run "
                f"with the minimal lowering ({first.problem})"
            )
        return first.run.outputs

    def error_of(self, run: Run) -> Error:
        """How far a build's model outputs are from the baseline (the worst output)."""
        if len(run.outputs) != len(self.baseline):
            return mismatch(f"{len(run.outputs)} outputs where the baseline has {len(self.baseline)}")
        errors = [
            compare(out, base, self.quant.get(name), self.quant.get(name))
            for out, base, name in zip(run.outputs, self.baseline, self.output_names)
        ]
        return worst(errors) if errors else Error(0.0, 0.0, 1.0, None, False)

    # -- relax ---------------------------------------------------------------------------
    def relax(self, k: int) -> Evaluated:
        """Snapshot ``k`` built with the minimal lowering, run and compared (once)."""
        got = self.relax_done.get(k)
        if got is not None:
            return got
        snap = self.snapshots[k]
        if self.announce is not None:
            self.announce(f"bisect: the module after {snap.name} (pass {snap.index})")
        try:
            run = run_snapshot(self.model, self.origins, snap, self.target, self.inputs)
        except ExplorerError:
            raise
        except Exception as err:  # noqa: BLE001 - an unbuildable snapshot is skipped, not fatal
            got = Evaluated(snap.index, snap.name, snap.stage, None, None, _brief(err))
        else:
            error = self.error_of(run) if hasattr(self, "baseline") else Error(0.0, 0.0, 1.0, None, False)
            got = Evaluated(snap.index, snap.name, snap.stage, error, run)
        self.relax_done[k] = got
        return got

    def _bad(self, k: int) -> bool | None:
        ev = self.relax(k)
        return None if ev.error is None else ev.error.diverges

    def find_relax(self) -> tuple[int, int] | None:
        """``(last good, first bad)`` snapshot positions, or None if the last
        buildable snapshot matches the baseline. ``last good`` is -1 for the baseline
        itself (the reference, when the import is already off)."""
        n = len(self.snapshots)
        hi = next((k for k in range(n - 1, -1, -1) if self._bad(k) is not None), None)
        if hi is None or not self._bad(hi):
            return None
        lo = -1 if self.reference is not None else 0
        if lo == 0 and self._bad(0):
            return None  # cannot happen: snapshot 0 is the baseline
        while hi - lo > 1:
            mid = (lo + hi) // 2
            probe = [m for m in sorted(range(lo + 1, hi), key=lambda m: abs(m - mid))]
            verdict, at = None, None
            for m in probe:
                verdict = self._bad(m)
                if verdict is not None:
                    at = m
                    break
            if at is None:
                break  # nothing between lo and hi can be built: hi is the first we can tell
            if verdict:
                hi = at
            else:
                lo = at
        return lo, hi

    # -- tir -----------------------------------------------------------------------------
    def full(self, disabled: list[str]) -> Evaluated:
        """The whole pipeline rebuilt with ``disabled`` passes left out, run and compared."""
        start = self.snapshots[0].mod
        if self.announce is not None:
            self.announce(
                "bisect: the real build" if not disabled else f"bisect: the build without {', '.join(disabled)}"[:120]
            )
        try:
            run = run_full(
                self.model, self.origins, start, self.final_relax, self.target, self.pipeline, disabled, self.inputs
            )
        except ExplorerError:
            raise
        except Exception as err:  # noqa: BLE001 - a pass that cannot be left out
            got = Evaluated(-1, ",".join(disabled), "tir", None, None, _brief(err))
        else:
            got = Evaluated(-1, ",".join(disabled), "tir", self.error_of(run), run)
        self.tir_done.append(got)
        return got

    def real(self) -> Evaluated:
        """The compiled model (the recorded compile's executable when at hand, else the whole
        pipeline rebuilt), run and compared (once)."""
        if self._real is not None:
            return self._real
        if self.executable is None:
            self._real = self.full([])
            return self._real
        if self.announce is not None:
            self.announce("bisect: the compiled model")
        try:
            run = run_executable(self.model, self.executable, self.target, self.final_relax, self.origins, self.inputs)
        except ExplorerError:
            raise
        except Exception as err:  # noqa: BLE001 - reported, as for a rebuild
            self._real = Evaluated(-1, "", "tir", None, None, _brief(err))
        else:
            self._real = Evaluated(-1, "", "tir", self.error_of(run), run)
        return self._real

    def find_tir(self) -> tuple[str | None, Evaluated]:
        """The TIR pass whose absence removes the divergence of the real build, if any;
        with the real build's evaluation."""
        real = self.real()
        if real.error is None:
            raise ExplorerError(f"{self.model.path}: the compiled model could not be rebuilt and run ({real.problem})")
        if not real.error.diverges:
            return None, real
        return self._search(self.tir_passes), real

    def _search(self, passes: list[str]) -> str | None:
        if not passes:
            return None
        off = self.full(passes)
        if off.error is not None and off.error.diverges:
            return None  # leaving all of them out does not help: not among them
        if len(passes) == 1:
            return passes[0] if off.error is not None else None
        half = len(passes) // 2
        first, second = passes[:half], passes[half:]
        if off.error is not None:  # the divergence is gone: the culprit is one of them
            return self._search(first) or self._search(second)
        # leaving all out breaks the build: look at each half on its own
        return self._search(first) or self._search(second)


def first_changed_layer(model: Model, before: dict, after: dict, quant: dict) -> tuple[Layer, Error] | None:
    """The first layer (graph order) whose output differs between two runs' observations
    (``(layer id, output) -> array``) beyond the thresholds."""
    for layer in model.layers:
        for j, t in enumerate(layer.outputs):
            a, b = after.get((layer.id, j)), before.get((layer.id, j))
            if a is None or b is None:
                continue
            err = compare(a, b, quant.get(t.name), quant.get(t.name))
            if err.diverges:
                return layer, err
    return None

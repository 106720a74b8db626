"""The capture side: read the memory plan from the Relax module after ``KillAfterLastUse`` (as
the compile passes it), the kernels' scratch from the final TIR, and write ``memory.json``."""

from __future__ import annotations

import json
import time

from tvm_explorer.bundle.sections.memory import MEMORY_FILE
from tvm_explorer.memory import assemble, timeline
from tvm_explorer.memory.plan import Plan, bounds_of, read_plan

PLAN_PASS = "KillAfterLastUse"
"""The pass after which the plan is read: every allocation and every kill are there, and
shapes are still TVM's expressions (``VMShapeLower`` later turns symbolic ones into loads
from the VM's shape heap)."""


def _entry(mod) -> str | None:
    """The function the VM runs: ``main``, else the first public Relax function."""
    from tvm import relax

    names = [gv.name_hint for gv, f in mod.functions.items() if isinstance(f, relax.Function)]
    if "main" in names:
        return "main"
    for gv, f in mod.functions.items():
        if isinstance(f, relax.Function) and f.attrs is not None and f.attrs.get("global_symbol") is not None:
            return gv.name_hint
    return names[0] if names else None


def _pinned(func, arrays) -> dict[str, int]:
    """Symbolic dimensions of the entry's inputs, pinned by the arrays the run gets."""
    from tvm import tirx

    out: dict[str, int] = {}
    for param, array in zip(func.params, arrays or ()):
        ty = getattr(param, "ty", None)
        values = getattr(getattr(ty, "shape", None), "values", None)
        shape = getattr(array, "shape", None)
        if values is None or shape is None or len(values) != len(shape):
            continue
        for dim, size in zip(values, shape):
            if isinstance(dim, tirx.Var):
                out.setdefault(str(dim.name), int(size))
    return out


class MemoryRecorder:
    """Follows one compile (a session listener); ``finish`` writes ``memory.json``."""

    def __init__(self, model, arrays=None):
        self.model = model
        self.arrays = arrays  # the run's inputs (--profile): they pin symbolic dimensions
        self.plan: Plan | None = None
        self.analysed: dict = {"pass": None, "document": None}
        self.symbols: list[dict] = []
        self.seconds = 0.0
        self.session = None
        self.doc: dict | None = None
        self.failure: str | None = None  # why no memory.json was written (a bug of ours)

    def listen(self, session) -> None:
        self.session = session
        session.listeners.append(self._after_pass)

    def _after_pass(self, _index, name, stage, mod) -> None:
        if stage != "relax" or name != PLAN_PASS or self.failure is not None:
            return
        try:
            self._read(mod, name)
        except Exception as err:  # noqa: BLE001 - the memory timeline never fails a compile
            self._failed(err)

    def _failed(self, err: Exception) -> None:
        self.plan = None
        self.failure = f"{type(err).__name__}: {' '.join(str(err).split())[:300]}"

    def _read(self, mod, pass_name: str | None) -> None:
        started = time.perf_counter()
        function = _entry(mod)
        if function is None:
            return
        func = mod[function]
        bounds = bounds_of(func)
        sources = dict.fromkeys(bounds, "tir_var_upper_bound")
        for name, value in _pinned(func, self.arrays).items():
            if name not in bounds:
                bounds[name] = value
                sources[name] = "inputs"
        self.plan = read_plan(mod, function, bounds)
        self.symbols = [
            {"name": name, "value": value, "source": sources.get(name)}
            for name, value in sorted(self.plan.symbols.items())
        ]
        self._bounds = bounds
        session = self.session
        self.analysed = {
            "pass": pass_name,
            "document": session.last_document.get("relax") if session is not None else None,
        }
        self.seconds += time.perf_counter() - started

    def finish(
        self, session, target: str, allocations: dict | None, why_not: str | None, reference: dict | None
    ) -> dict | None:
        """Compute the timeline of the finished compile and add ``memory.json`` to the bundle
        (``allocations``: what the profiled run measured; ``why_not``: why nothing was
        measured although asked)."""
        if self.failure is not None:
            return None
        try:
            return self._finish(session, target, allocations, why_not, reference)
        except Exception as err:  # noqa: BLE001 - the memory timeline never fails a compile
            self._failed(err)
            return None

    def _finish(self, session, target, allocations, why_not, reference) -> dict | None:
        started = time.perf_counter()
        if self.plan is None and session.final_relax is not None:
            self._read(session.final_relax, None)  # a pipeline without KillAfterLastUse
        if self.plan is None:
            return None
        from tvm_explorer.memory.scratch import module_scratch

        scratch = module_scratch(session.final_tir, self._bounds) if session.final_tir is not None else {}
        outputs = {
            lay.id: [([d if isinstance(d, int) else str(d) for d in t.shape], t.dtype) for t in lay.outputs]
            for lay in self.model.layers
        }
        line = timeline.build(self.plan, scratch, session.origins.get, outputs)
        self.seconds += time.perf_counter() - started
        self.doc = assemble.build(
            self.plan,
            line,
            target=target,
            analysed=self.analysed,
            symbols=self.symbols,
            measured=assemble.measured_section(allocations, why_not, line),
            reference=reference,
            analysis_ms=self.seconds * 1e3,
        )
        session.writer.add_file(MEMORY_FILE, json.dumps(self.doc, indent=1))
        return self.doc

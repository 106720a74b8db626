"""Compile time and changed functions of every top-level pass, and FLOPs of every PrimFunc.

Two pass instruments share one clock: ``StopWatch`` goes first in the instrument list (its
``run_after_pass`` runs before the capture's, which prints and indexes the module) and
``StartWatch`` last (its ``run_before_pass`` runs after everyone else's). So a pass's time
is the pass alone, not the explorer's own recording around it.
"""

from __future__ import annotations

import time

import tvm
from tvm import relax

from tvm_explorer.capture.pass_changes import forget, same_function
from tvm_explorer.capture.pipeline_steps import CONTAINERS


class PassClock:
    """What the two watches measured: ``records`` is ``[(name, ms, changed_functions)]`` of
    the top-level passes in order; ``flops`` the FLOPs TVM estimates per PrimFunc of the
    first TIR module (later TIR is lowered past what ``estimate_tir_flops`` reads)."""

    def __init__(self):
        self.stack: list[str] = []
        self.records: list[tuple[str, float, int]] = []
        self.flops: dict[str, float] = {}
        self._flops_done = False
        self._before: dict[str, object] | None = None
        self._started = 0.0

    def instruments(self) -> tuple[object, object]:
        """``(first, last)``: put ``first`` before every other instrument, ``last`` after."""
        return StopWatch(self), StartWatch(self)

    def _top_level(self) -> bool:
        return all(name in CONTAINERS for name in self.stack)

    def before(self, mod, info) -> None:
        top = self._top_level() and info.name not in CONTAINERS
        self.stack.append(info.name)
        if not top:
            return
        funcs = {gv.name_hint: f for gv, f in mod.functions.items()}
        if not self._flops_done and not any(isinstance(f, relax.Function) for f in funcs.values()):
            self._flops_done = True
            self.flops = estimate_flops(mod)
        self._before = funcs
        self._started = time.perf_counter()

    def after(self, mod, info) -> None:
        stopped = time.perf_counter()
        if self.stack:
            self.stack.pop()
        if info.name in CONTAINERS or not self._top_level() or self._before is None:
            return
        before, self._before = self._before, None
        after = {gv.name_hint: f for gv, f in mod.functions.items()}
        changed = 0
        forget()  # answers about an earlier pass's functions (the capture asks right after us)
        for name in before.keys() | after.keys():
            old, new = before.get(name), after.get(name)
            if old is None or new is None or not same_function(old, new):
                changed += 1
        self.records.append((info.name, (stopped - self._started) * 1e3, changed))


def estimate_flops(mod) -> dict[str, float]:
    """FLOPs per PrimFunc as ``tvm.s_tir.analysis.estimate_tir_flops`` counts them (functions
    it cannot read are left out)."""
    from tvm.s_tir.analysis import estimate_tir_flops

    out: dict[str, float] = {}
    for gv, func in mod.functions.items():
        if not isinstance(func, tvm.tirx.PrimFunc):
            continue
        try:
            out[gv.name_hint] = float(estimate_tir_flops(tvm.IRModule({gv: func})))
        except Exception:  # noqa: BLE001 - TVM has no estimate for some statements
            continue
    return out


class _Watch:
    """One of the two pass instruments around the one clock."""

    def __init__(self, clock: PassClock):
        self.clock = clock


@tvm.ir.instrument.pass_instrument
class StartWatch(_Watch):
    """Starts the clock (last instrument: after everyone else's ``run_before_pass``)."""

    def run_before_pass(self, mod, info):
        self.clock.before(mod, info)


@tvm.ir.instrument.pass_instrument
class StopWatch(_Watch):
    """Stops the clock (first instrument: before everyone else's ``run_after_pass``)."""

    def run_after_pass(self, mod, info):
        self.clock.after(mod, info)


def align(passes: list[dict], records: list[tuple[str, float, int]]) -> dict[int, tuple[float, int]]:
    """Pass index -> ``(ms, changed_functions)``: the clock's records matched in order, by
    name, to the manifest's pass list (which also has entries no pass ran for: the import,
    the TIR input, codegen)."""
    out: dict[int, tuple[float, int]] = {}
    k = 0
    for entry in passes:
        if k < len(records) and records[k][0] == entry.get("name"):
            out[int(entry["index"])] = (records[k][1], records[k][2])
            k += 1
    return out

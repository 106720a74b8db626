"""Record which dlight rule scheduled each GPU PrimFunc, with its replayable trace.

``s_tir.dlight.ApplyDefaultSchedule`` tries its rules on every PrimFunc; the first rule that
returns a schedule wins. While a capture runs we look over its shoulder (the rules are
called exactly as TVM calls them; the schedule returned is the same object): for each
PrimFunc we keep the rule's name, the trace as TVM prints it (an ``apply_trace(sch)``
program) and, for every loop of the scheduled function, the trace step that created it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import tvm
from tvm import s_tir

from tvm_explorer.provenance.spans import handle

METASCHEDULE = "MetaSchedule"  # the rule of a schedule a tuning database gave (compile --tune)


@dataclass
class ScheduleRecord:
    """The schedule of one PrimFunc."""

    primfunc: str
    rule: str
    program: str
    steps: list[str]
    first_step_line: int  # 1-based line of step 0 in ``program``
    loop_steps: dict[str, int] = field(default_factory=dict)  # loop variable -> step


def _loop_steps(sch) -> dict[str, int]:
    """Loop variable of the scheduled function -> the first step that created that loop.
    Lookups (``get_loops``) create nothing: a loop they return existed before."""
    out: dict[str, int] = {}
    for step, inst in enumerate(sch.trace.insts):
        if inst.kind.name.startswith("Get"):
            continue
        for rv in inst.outputs:
            if type(rv).__name__ != "LoopRV":
                continue
            try:
                loop = sch.get(rv)
            except Exception:  # noqa: BLE001 - a loop a later step replaced
                continue
            name = getattr(getattr(loop, "loop_var", None), "name", None)
            if name:
                out.setdefault(name, step)
    return out


class ScheduleLinks:
    """Schedule records by PrimFunc, and the links from functions and loops to their steps."""

    def __init__(self, records: dict[str, ScheduleRecord]):
        self.records = records

    def record_for(self, function_name: str) -> ScheduleRecord | None:
        """The record of a PrimFunc, or of the PrimFunc a kernel was split from."""
        if function_name in self.records:
            return self.records[function_name]
        for suffix in ("_kernel", "_kernel0", "_compute_"):
            if function_name.endswith(suffix) and function_name[: -len(suffix)] in self.records:
                return self.records[function_name[: -len(suffix)]]
        return None

    def trace_link(self, function_name: str, loop_var: str | None = None) -> str | None:
        """``trace:<primfunc>:<step>`` for a loop a schedule step created; for a whole
        function (``loop_var`` None) ``trace:<primfunc>:`` if it was scheduled; else None."""
        rec = self.record_for(function_name)
        if rec is None:
            return None
        if loop_var is None:
            return f"trace:{rec.primfunc}:"
        if loop_var not in rec.loop_steps:
            return None
        return f"trace:{rec.primfunc}:{rec.loop_steps[loop_var]}"


class ScheduleRecorder(ScheduleLinks):
    """While active (a context manager), records every schedule dlight applies."""

    def __init__(self):
        super().__init__({})
        self._names: dict[int, str] = {}
        self._saved: tuple[Any, Any] | None = None  # dlight's module, its own _apply_rules

    def __enter__(self) -> ScheduleRecorder:
        from tvm.s_tir.dlight.base import transform as dl_transform

        original_apply = dl_transform._apply_rules
        recorder = self

        def apply_rules(func, target, rules, tunable):
            for rule in rules:
                space = rule.apply(func, target, tunable)
                if space is None:
                    continue
                if isinstance(space, s_tir.Schedule):
                    space = [space]
                recorder._record(func, rule, space)
                return space
            return None

        self._saved = (dl_transform, original_apply)
        dl_transform._apply_rules = apply_rules
        return self

    def __exit__(self, *exc):
        assert self._saved is not None  # set by __enter__
        module, original_apply = self._saved
        module._apply_rules = original_apply
        return False

    def instrument(self):
        """A pass instrument that tells the recorder the PrimFuncs' names before scheduling."""
        return _NameWatcher(self)

    def _record(self, func, rule, space) -> None:
        name = self._names.get(handle(func))
        if name is None or len(space) != 1:
            return
        self.add(name, type(rule).__name__, space[0])

    def add(self, name: str, rule: str, sch) -> None:
        """Record ``sch`` (a ``s_tir.Schedule`` whose trace made PrimFunc ``name``) as made by
        ``rule`` (a dlight rule's class name, or ``MetaSchedule`` for a tuned kernel)."""
        program = str(sch.trace)
        lines = program.split("\n")
        first = next((i + 2 for i, line in enumerate(lines) if line.startswith("def apply_trace")), 1)
        steps = lines[first - 1 : first - 1 + len(sch.trace.insts)]
        self.records[name] = ScheduleRecord(name, rule, program, steps, first, _loop_steps(sch))

    def files(self) -> list[tuple[dict, str]]:
        """``(manifest entry, file text)`` for every recorded schedule."""
        out = []
        for name, rec in sorted(self.records.items()):
            if rec.rule == METASCHEDULE:
                header = (
                    f"# MetaSchedule tuned PrimFunc {name} (the database's best record); replay with apply_trace(sch)\n"
                )
            else:
                header = f"# dlight rule {rec.rule} scheduled PrimFunc {name}; replay with apply_trace(sch)\n"
            entry = {
                "primfunc": name,
                "rule": rec.rule,
                "path": f"traces/{name}.py",
                "first_step_line": rec.first_step_line + 1,
                "steps": len(rec.steps),
                "loops": rec.loop_steps,
                "step_text": {
                    str(step): rec.steps[step].strip()
                    for step in sorted(set(rec.loop_steps.values()))
                    if step < len(rec.steps)
                },
            }
            out.append((entry, header + rec.program + "\n"))
        return out


@tvm.ir.instrument.pass_instrument
class _NameWatcher:
    """Before ``ApplyDefaultSchedule`` runs, note which PrimFunc object has which name."""

    def __init__(self, recorder: ScheduleRecorder):
        self.recorder = recorder

    def run_before_pass(self, mod, info):
        if info.name == "ApplyDefaultSchedule":
            self.recorder._names = {handle(f): gv.name_hint for gv, f in mod.functions.items()}

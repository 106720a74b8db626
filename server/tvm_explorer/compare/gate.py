"""Cost regressions between two bundles (``compare --fail-on``): per matched layer and for the
whole model, how time, code and workspace moved from BASE (bundle A) to NEW (bundle B), and
which growths break a rule (``compare/rules.py``); and, with the ``tuning`` rule, which layers
tuned in BASE lost their tuned schedule in NEW (``tuning.json``: untuned, database miss, build
failed, or NEW compiled without ``--tune``).

A time regression must also stand out of the measurement's own noise: the ranges of the two
bundles' runs (``time_runs_ms``: the layer's time in each ``--repeat`` run) must lie apart by
more than the clock's resolution (``TIME_RESOLUTION_MS``) — NEW's fastest run slower than
BASE's slowest by more than that — and the change must exceed it too. Code lines and workspace bytes are exact: any growth past a rule is a
regression. See docs/compare.md.

Why whole ranges and not the quartiles: the runs of one build come back to back, and on a shared
machine a whole build drifts (seven builds of one model and config: layer medians 0.242–0.286
ms, the middle half of a build's runs often under 1 % wide). Quartiles flagged 50 of 168 such
cases at +1 %; ranges 1 — a drift that moved every run of a build, which no statistic of the
runs can tell from a change (docs/compare.md).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field

from tvm_explorer.bundle.reader import Bundle
from tvm_explorer.bundle.sections.costs import CostsDocument, clock_label, measured_on
from tvm_explorer.compare.compare import Comparison, code_changed
from tvm_explorer.compare.rules import METRICS, TUNING, Rule, describe, rules_for
from tvm_explorer.compare.tuning import lost_tuned_schedule, side
from tvm_explorer.compare.types import LayerTuning
from tvm_explorer.errors import BundleError, ExplorerError

TIME_RESOLUTION_MS = 0.001
"""Time changes of at most this much are never a change: per call, the timing hook itself costs
2–5 µs and times are recorded to 0.1 µs (docs/costs.md)."""


class GateError(ExplorerError):
    """The bundles cannot be judged by the rules (no costs, no measured time, other clocks)."""


@dataclass(frozen=True)
class Spread:
    """The range of a measurement's runs: its fastest and slowest run, and how many runs."""

    low: float
    high: float
    runs: int

    def to_json(self) -> dict:
        return {"min": self.low, "max": self.high, "runs": self.runs}


def spread_of(runs: list[float] | None) -> Spread | None:
    """The range of ``runs`` (at least two runs; one run has no spread)."""
    if not runs or len(runs) < 2:
        return None
    return Spread(min(runs), max(runs), len(runs))


@dataclass
class Change:
    """One metric of one row, BASE → NEW, and the verdict of the rules on it."""

    metric: str
    before: float | None
    after: float | None
    spread_before: Spread | None = None
    spread_after: Spread | None = None
    rules: list[Rule] = field(default_factory=list)  # the rules that judge it
    exceeded: list[Rule] = field(default_factory=list)  # those its growth is beyond
    regression: bool = False

    @property
    def known(self) -> bool:
        return self.before is not None and self.after is not None

    @property
    def delta(self) -> float:
        return (self.after or 0.0) - (self.before or 0.0)

    @property
    def relative(self) -> float | None:
        """The change as a fraction of BASE; infinity from nothing; None if unknown."""
        if not self.known:
            return None
        if not self.before:
            return 0.0 if not self.after else math.inf
        return self.delta / self.before

    @property
    def apart(self) -> bool | None:
        """Time: whether the ranges of the two bundles' runs lie apart by more than the clock's
        resolution — every run of one slower than every run of the other by more than
        ``TIME_RESOLUTION_MS`` (None: a side has no spread recorded). Ranges 0.1 µs apart are
        one measurement's noise, not a change."""
        if self.spread_before is None or self.spread_after is None:
            return None
        gap = max(self.spread_after.low - self.spread_before.high, self.spread_before.low - self.spread_after.high)
        return gap > TIME_RESOLUTION_MS

    @property
    def changed(self) -> bool:
        """A change worth showing: any for code and workspace; for time, beyond the resolution
        and (where both sides have runs) out of the runs' noise."""
        if not self.known:
            return False
        if self.metric != "time":
            return self.delta != 0
        return abs(self.delta) > TIME_RESOLUTION_MS and self.apart is not False

    def to_json(self) -> dict:
        out: dict = {"before": self.before, "after": self.after}
        if self.known:
            rel = self.relative
            out["delta"] = round(self.delta, 4)
            out["relative"] = None if rel is None or math.isinf(rel) else round(rel, 4)
        if self.metric == "time":
            out["spread_before"] = self.spread_before.to_json() if self.spread_before else None
            out["spread_after"] = self.spread_after.to_json() if self.spread_after else None
        out["changed"] = self.changed
        out["regression"] = self.regression
        out["exceeded"] = [r.text for r in self.exceeded]
        return out


@dataclass
class TuningChange(Change):
    """A layer's tuning, BASE → NEW (``compare.tuning.side``): a regression under the
    ``tuning`` rule when it was tuned in BASE and is not in NEW."""

    state_before: str | None = None
    state_after: str | None = None
    speedup_before: float | None = None

    @property
    def known(self) -> bool:
        return self.state_before is not None and self.state_after is not None

    @property
    def delta(self) -> float:
        return 0.0

    @property
    def relative(self) -> float | None:
        return None

    @property
    def changed(self) -> bool:
        return self.known and self.state_before != self.state_after

    @property
    def lost(self) -> bool:
        return lost_tuned_schedule(self.state_before, self.state_after)

    def to_json(self) -> dict:
        return {
            "before": self.state_before,
            "after": self.state_after,
            "changed": self.changed,
            "lost_tuned_schedule": self.lost,
            "regression": self.regression,
            "exceeded": [r.text for r in self.exceeded],
        }


def _tuning_change(rules: list[Rule], before: LayerTuning, after: LayerTuning) -> TuningChange:
    change = TuningChange(TUNING, None, None)
    change.state_before, change.state_after = before.get("state"), after.get("state")
    change.speedup_before = before.get("speedup")
    change.rules = rules_for(rules, "layer", TUNING)
    if change.rules and change.lost:
        change.exceeded = list(change.rules)
        change.regression = True
    return change


@dataclass
class Row:
    """A matched layer (``scope`` "layer") or the whole model (``scope`` "model")."""

    scope: str
    label: str  # "op 2", "node 5", "model"
    opcode: str
    name: str
    changes: dict[str, Change]
    subgraph: int = 0
    op_index: int = -1
    code_changed: bool = False

    @property
    def regressions(self) -> list[Change]:
        return [c for c in self.changes.values() if c.regression]

    @property
    def changed(self) -> bool:
        return any(c.changed for c in self.changes.values())

    def severity(self) -> float:
        """How much the row grew: the largest relative growth of a changed metric (for ordering)."""
        grown = [c.relative for c in self.changes.values() if c.changed and c.relative is not None]
        return max((abs(g) for g in grown), default=0.0)

    def to_json(self) -> dict:
        out: dict = {"scope": self.scope}
        if self.scope == "layer":
            out |= {"subgraph": self.subgraph, "op_index": self.op_index, "opcode": self.opcode, "name": self.name}
            out["code_changed"] = self.code_changed
        out["metrics"] = {m: c.to_json() for m, c in self.changes.items()}
        out["regression"] = bool(self.regressions)
        return out


@dataclass
class Gate:
    """Two bundles' costs side by side, judged by ``rules`` (none: only the changes)."""

    comparison: Comparison
    rules: list[Rule]
    model: Row
    layers: list[Row]
    unit: str  # what a layer is called: "op" or "node"
    timed: bool  # both bundles have measured time on the same clock
    clock: str  # how, in words ("CPU time, median of 10 runs")
    notes: list[str] = field(default_factory=list)

    @property
    def rows(self) -> list[Row]:
        return [*self.layers, self.model]

    @property
    def regressions(self) -> list[Row]:
        """The rows with a regression, the largest growth first, the model last."""
        layers = sorted((r for r in self.layers if r.regressions), key=lambda r: -r.severity())
        return layers + ([self.model] if self.model.regressions else [])

    @property
    def failed(self) -> bool:
        return any(r.regressions for r in self.rows)

    @property
    def spec(self) -> str:
        return describe(self.rules)

    def to_json(self) -> dict:
        return {
            "fail_on": self.spec or None,
            "failed": self.failed,
            "timed": self.timed,
            "clock": self.clock,
            "time_resolution_ms": TIME_RESOLUTION_MS,
            "model": self.model.to_json(),
            "layers": [r.to_json() for r in self.layers],
            "regressions": [
                {"scope": r.scope, "label": r.label, "name": r.name, "metrics": [c.metric for c in r.regressions]}
                for r in self.regressions
            ],
            "notes": list(self.notes),
        }


def _costs(bundle: Bundle, role: str) -> CostsDocument:
    try:
        costs = bundle.costs()
    except BundleError as err:
        raise GateError(f"{role} {err}; cannot judge its costs") from None
    if costs is None:
        raise GateError(
            f"{role} {bundle.root} has no costs.json (compiled by an older tvm-explorer): compile it again to "
            "compare its costs"
        )
    return costs


def _measured(costs: CostsDocument) -> bool:
    return costs["profile"].get("status") == "measured" and costs.get("total_ms") is not None


def _not_measured(bundle: Bundle, costs: CostsDocument, role: str) -> str:
    profile = costs["profile"]
    reason = profile.get("reason") or profile.get("status") or "not measured"
    return f"{role} {bundle.root} has no measured time ({reason})"


def _where(costs: CostsDocument) -> tuple:
    """What the times were measured on: the device kind and clock, and for a remote profile
    the CPUs of its devices (times from this machine and from a board are not comparable)."""
    profile = costs["profile"]
    remote = profile.get("remote") or {}
    cpus = tuple(sorted({d.get("cpu") or d.get("triple") or "" for d in remote.get("devices") or []}))
    return (profile.get("device") or "cpu", profile.get("clock"), profile.get("device_name"), cpus)


def _where_text(costs: CostsDocument) -> str:
    device, _, name, _ = _where(costs)
    return f"{clock_label(costs['profile'])} " + (measured_on(costs["profile"]) or f"on {name or device}")


def _timing(a: Bundle, ca: CostsDocument, b: Bundle, cb: CostsDocument, rules: list[Rule]) -> tuple[bool, list[str]]:
    """Whether times can be compared; raises GateError when a time rule cannot be judged."""
    wants_time = any(r.metric == "time" for r in rules)
    missing = [_not_measured(bnd, c, role) for bnd, c, role in ((a, ca, "BASE"), (b, cb, "NEW")) if not _measured(c)]
    if missing:
        if wants_time:
            raise GateError(
                "; ".join(missing)
                + ": a time rule needs both bundles compiled with --profile (on the same kind of device)"
            )
        return False, ["time not compared: " + "; ".join(missing)]
    if _where(ca) != _where(cb):
        why = f"BASE was timed with {_where_text(ca)}, NEW with {_where_text(cb)}: their times are not comparable"
        if wants_time:
            raise GateError(why)
        return False, ["time not compared: " + why]
    return True, []


def _change(metric: str, scope: str, rules: list[Rule], before, after, runs_before=None, runs_after=None) -> Change:
    change = Change(metric, before, after, spread_of(runs_before), spread_of(runs_after))
    change.rules = rules_for(rules, scope, metric)
    if not change.rules or not change.known:
        return change
    change.exceeded = [r for r in change.rules if r.exceeded(float(before), float(after))]
    beyond = len(change.exceeded) == len(change.rules)
    if metric == "time":
        beyond = beyond and change.delta > TIME_RESOLUTION_MS and change.apart is not False
    change.regression = beyond
    return change


def _values(entry: Mapping[str, object] | None, timed: bool, code: int | None) -> dict[str, tuple]:
    entry = entry or {}
    return {
        "time": (entry.get("time_ms"), entry.get("time_runs_ms")) if timed else (None, None),
        "code": (code, None),
        "workspace": (entry.get("workspace_bytes"), None),
    }


def _model_values(costs: CostsDocument, timed: bool, code: int | None) -> dict[str, tuple]:
    totals = costs.get("totals") or {}
    workspace = totals.get("workspace_bytes")
    return {
        "time": (costs.get("total_ms"), costs["profile"].get("total_runs_ms")) if timed else (None, None),
        "code": (code, None),
        "workspace": (
            workspace if workspace is not None else sum(k["workspace_bytes"] for k in costs["kernels"]),
            None,
        ),
    }


def _total(size) -> int | None:
    return size.attributed_lines if size is not None else None


def _changes(scope: str, rules: list[Rule], va: dict[str, tuple], vb: dict[str, tuple]) -> dict[str, Change]:
    return {m: _change(m, scope, rules, va[m][0], vb[m][0], va[m][1], vb[m][1]) for m in METRICS}


def judge(comparison: Comparison, rules: list[Rule]) -> Gate:
    """The costs of a comparison's two bundles, BASE (A) → NEW (B), judged by ``rules``.
    Raises GateError when a bundle has no usable costs, or a time rule cannot be judged."""
    from tvm_explorer.frontends import frontend_of

    a, b = comparison.a, comparison.b
    ca, cb = _costs(a, "BASE"), _costs(b, "NEW")
    timed, notes = _timing(a, ca, b, cb, rules)
    # Code lines are the comparison's own count (costs.static.code_size, as costs.json's),
    # compared only between code of one kind: C lines and LLVM IR lines are not one measure.
    same_kind = comparison.same_code_kind
    if not same_kind:
        if any(r.metric == "code" for r in rules):
            raise GateError(
                f"a code rule cannot be judged: different code kinds ({comparison.code_kinds_text()}); "
                "code size is compared only between code of one kind (judge time and workspace)"
            )
        notes.append(f"code size not compared: different code kinds ({comparison.code_kinds_text()})")
    tuning_a, tuning_b = comparison.tuning()
    judge_tuning = any(r.metric == TUNING for r in rules)
    if judge_tuning and tuning_a is None:
        raise GateError(
            f"BASE {a.root} has no tuning.json (compiled without --tune): the tuning rule needs a tuned BASE "
            "to tell whether a layer lost its tuned schedule"
        )
    if judge_tuning and tuning_b is None:
        notes.append(f"NEW {b.root} has no tuning.json (compiled without --tune): every layer tuned in BASE lost it")
    entries_a = {(e["subgraph"], e["op_index"]): e for e in ca["layers"]}
    entries_b = {(e["subgraph"], e["op_index"]): e for e in cb["layers"]}
    unit = frontend_of((a.manifest.get("model") or {}).get("kind", "tflite")).unit
    layers = []
    for la, lb in comparison.pairs:
        lay = la.layer
        va = _values(entries_a.get((lay.subgraph, lay.op_index)), timed, la.code_lines if same_kind else None)
        vb = _values(entries_b.get((lb.layer.subgraph, lb.layer.op_index)), timed, lb.code_lines if same_kind else None)
        row = Row("layer", f"{unit} {lay.op_index}", lay.opcode, la.name, _changes("layer", rules, va, vb))
        row.subgraph, row.op_index = lay.subgraph, lay.op_index
        row.code_changed = code_changed(la, lb) if same_kind else False
        if tuning_a is not None or tuning_b is not None:
            row.changes[TUNING] = _tuning_change(rules, side(tuning_a, lay.id), side(tuning_b, lb.layer.id))
        layers.append(row)
    model = Row(
        "model",
        "model",
        "",
        "whole model",
        _changes(
            "model",
            rules,
            _model_values(ca, timed, _total(comparison.size_a) if same_kind else None),
            _model_values(cb, timed, _total(comparison.size_b) if same_kind else None),
        ),
    )
    if timed:
        runs = [len(c["profile"].get("total_runs_ms") or []) for c in (ca, cb)]
        repeats = {c["profile"].get("repeat") for c in (ca, cb)}
        of = (
            f"{repeats.pop()} runs each"
            if len(repeats) == 1
            else f"{ca['profile'].get('repeat')} / {cb['profile'].get('repeat')} runs"
        )
        clock = f"{clock_label(ca['profile'])}, median of {of}"
        if min(runs) < 2:
            notes.append(
                "time judged without the runs' spread: "
                + (
                    "a bundle was profiled with --repeat 1"
                    if all(c["profile"].get("total_runs_ms") is not None for c in (ca, cb))
                    else "a bundle predates per-run times (compile it again with --profile)"
                )
            )
    else:
        clock = "time not compared"
    return Gate(comparison, rules, model, layers, unit, timed, clock, notes)

"""The grammar of ``compare --fail-on``: which growth of which cost counts as a regression.

    SPEC   := RULE ("," RULE)*
    RULE   := [SCOPE "."] METRIC ">" ["+"] NUMBER UNIT
            | ["layer."] "tuning"                 (a layer tuned in BASE lost its tuned schedule in NEW)
    SCOPE  := "model" | "layer"                  (none: every layer and the whole model)
    METRIC := "time" | "code" | "workspace" | "memory"   (memory is workspace)
    UNIT   := "%"                                (relative to BASE)
            | time: "ms" | "us" | "s"            code: "lines" or none
            | workspace: "B" | "KiB" | "MiB" | "GiB" or none (bytes)

Rules of one metric that apply to a row are all to be exceeded (``time>+10%,time>+0.05ms``: more
than 10 % *and* more than 0.05 ms); a scoped rule replaces the unscoped ones of its metric for
its rows (``time>+10%,model.time>+2%``: layers at 10 %, the model at 2 %). See docs/compare.md.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from tvm_explorer.errors import ExplorerError

METRICS = ("time", "code", "workspace")
TUNING = "tuning"  # not a cost: a layer's kernels tuned in BASE (tuning.json), not all tuned in NEW
ALIASES = {"memory": "workspace"}
SCOPES = ("model", "layer")
# Absolute units per metric, as factors to the unit the costs are recorded in (ms, lines, bytes).
UNITS: dict[str, dict[str, float]] = {
    "time": {"ms": 1.0, "us": 1e-3, "µs": 1e-3, "s": 1e3},
    "code": {"": 1.0, "lines": 1.0, "line": 1.0},
    "workspace": {"": 1.0, "b": 1.0, "kib": 1024.0, "mib": 1024.0**2, "gib": 1024.0**3},
}
UNIT_NAMES = {"time": "ms, us or s", "code": "lines or none", "workspace": "B, KiB, MiB, GiB or none (bytes)"}
_RULE = re.compile(
    r"^\s*(?:(?P<scope>[A-Za-z_]+)\s*\.\s*)?(?P<metric>[A-Za-z_]+)\s*(?P<op>[<>=!]=?|)\s*"
    r"(?P<sign>[+-]?)\s*(?P<number>(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?|)\s*(?P<unit>[A-Za-zµ%]*)\s*$"
)


class BadFailOn(ExplorerError):
    """A ``--fail-on`` specification that does not follow the grammar."""


@dataclass(frozen=True)
class Rule:
    """``[scope.]metric > +amount unit``: ``relative`` rules are fractions of BASE (0.1 for
    10 %), others an amount in the metric's recorded unit (ms, lines, bytes)."""

    metric: str
    amount: float
    relative: bool
    scope: str | None = None  # "model", "layer" or None for both
    text: str = ""  # the rule as written, normalised (``time>+10%``)

    def exceeded(self, before: float, after: float) -> bool:
        """Whether growing from ``before`` to ``after`` is more than this rule allows (from
        nothing, any growth is more than any percentage)."""
        grown = after - before
        if grown <= 0:
            return False
        if not self.relative:
            return grown > self.amount
        return before <= 0 or grown > self.amount * before


def _fail(spec: str, clause: str, why: str) -> BadFailOn:
    where = f" (rule {clause.strip()!r})" if clause.strip() != spec.strip() else ""
    return BadFailOn(
        f"--fail-on {spec!r}{where}: {why}. Expected RULE[,RULE…] with RULE = [model.|layer.]METRIC>+N UNIT "
        "or 'tuning', e.g. 'time>+10%,code>+20%,workspace>+4KiB,tuning' (docs/compare.md)"
    )


def _number_text(value: float) -> str:
    return f"{value:g}"


def _tuning_rule(spec: str, clause: str) -> Rule | None:
    words = [w.strip().lower() for w in clause.split(".")]
    if words[-1] != TUNING:
        return None
    if len(words) > 2 or (len(words) == 2 and words[0] != "layer"):
        raise _fail(spec, clause, "'tuning' judges layers: write 'tuning' (or 'layer.tuning'), with no amount")
    return Rule(TUNING, 0.0, False, "layer", TUNING)


def parse_rule(spec: str, clause: str) -> Rule:
    """One rule of ``spec``; BadFailOn says what is wrong with it."""
    m = _RULE.match(clause)
    if not clause.strip():
        raise _fail(spec, clause, "an empty rule (two commas, or a comma at an end)")
    if m is not None and m["metric"].lower() == TUNING and (m["op"] or m["number"] or m["unit"]):
        raise _fail(spec, clause, "'tuning' takes no amount: it fails when a tuned layer lost its tuned schedule")
    tuning = _tuning_rule(spec, clause)
    if tuning is not None:
        return tuning
    if m is None:
        raise _fail(spec, clause, "not of the form METRIC>+N UNIT")
    scope, metric = m["scope"], m["metric"].lower()
    if scope is not None:
        scope = scope.lower()
        if scope not in SCOPES:
            raise _fail(spec, clause, f"unknown scope {m['scope']!r}: model or layer")
    metric = ALIASES.get(metric, metric)
    if metric not in METRICS:
        raise _fail(spec, clause, f"unknown metric {m['metric']!r}: time, code, workspace, memory or tuning")
    if m["op"] != ">":
        what = f"{m['op']!r}" if m["op"] else "no comparison"
        raise _fail(spec, clause, f"{what}: a rule says how much a cost may grow, with '>' (time>+10%)")
    if m["sign"] == "-":
        raise _fail(spec, clause, "a negative threshold: a rule is a growth, +N")
    if not m["number"]:
        raise _fail(spec, clause, "no number after '>'")
    amount = float(m["number"])
    unit = m["unit"]
    if unit == "%":
        text = f"{scope + '.' if scope else ''}{metric}>+{_number_text(amount)}%"
        return Rule(metric, amount / 100.0, True, scope, text)
    units = UNITS[metric]
    factor = units.get(unit.lower())
    if factor is None:
        shown = f"unit {unit!r}" if unit else "no unit"
        raise _fail(spec, clause, f"{shown} for {metric}: use % or {UNIT_NAMES[metric]}")
    text = f"{scope + '.' if scope else ''}{metric}>+{_number_text(amount)}{unit}"
    return Rule(metric, amount * factor, False, scope, text)


def parse(spec: str) -> list[Rule]:
    """The rules of a ``--fail-on`` specification; BadFailOn names the wrong rule and why."""
    if not spec.strip():
        raise BadFailOn(
            "--fail-on '': no rule. Expected RULE[,RULE…] with RULE = [model.|layer.]METRIC>+N UNIT, "
            "e.g. 'time>+10%,code>+20%' (docs/compare.md)"
        )
    return [parse_rule(spec, clause) for clause in spec.split(",")]


def rules_for(rules: list[Rule], scope: str, metric: str) -> list[Rule]:
    """The rules that judge ``metric`` of a row of ``scope``: those scoped to it, else the
    unscoped ones (all of them to be exceeded)."""
    scoped = [r for r in rules if r.metric == metric and r.scope == scope]
    return scoped or [r for r in rules if r.metric == metric and r.scope is None]


def describe(rules: list[Rule]) -> str:
    """The rules as one normalised specification (``time>+10%,code>+20%``)."""
    return ",".join(r.text for r in rules)

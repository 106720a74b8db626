"""The verdict of ``compare --fail-on`` written out: a few text lines for the terminal, a
Markdown table for a pull-request comment, a JUnit XML report for a CI system. Layer and model
names come from the bundles (untrusted): through ``inert`` in every format."""

from __future__ import annotations

import math
import os
import xml.etree.ElementTree as ET

from tvm_explorer.compare.gate import Change, Gate, Row, TuningChange
from tvm_explorer.costs.table import size
from tvm_explorer.inert import markdown as md
from tvm_explorer.inert import xml as inert_xml
from tvm_explorer.inert.text import one_line

MARKDOWN_ROWS = 50  # changed layers shown beyond the regressions (a PR comment has a size limit)
METRIC_WORDS = {"time": "time", "code": "code", "workspace": "workspace", "tuning": "tuning"}


def value_text(metric: str, value: float | None) -> str:
    """A cost in its unit: ``0.075 ms``, ``20 lines``, ``4 KiB``."""
    if value is None:
        return "–"
    if metric == "time":
        return f"{value:.3f} ms" if value >= 0.01 or value == 0 else f"{value:.4f} ms"
    if metric == "code":
        return f"{int(value)} lines"
    return size(int(value))


def _bare(metric: str, value: float | None) -> str:
    """The number without its unit, for the left of ``before → after unit``."""
    text = value_text(metric, value)
    return text.rsplit(" ", 1)[0] if metric != "workspace" else text


def relative_text(change: Change) -> str:
    """``+5280 %``, ``-12 %``, ``+0.4 %``, or ``new`` (from nothing)."""
    rel = change.relative
    if rel is None:
        return ""
    if math.isinf(rel):
        return "new"
    pct = rel * 100
    return f"{pct:+.0f} %" if abs(pct) >= 10 else f"{pct:+.1f} %"


def change_text(change: Change, moved: bool = False) -> str:
    """``0.075 → 4.047 ms (+5280 %)``, or the value alone when it did not change; ``moved``:
    a time that moved within its noise as ``0.545 → 0.602 ms (+10 %, within noise)``."""
    if not change.known:
        return value_text(change.metric, change.after if change.after is not None else change.before)
    arrow = f"{_bare(change.metric, change.before)} → {value_text(change.metric, change.after)}"
    if change.changed:
        return f"{arrow} ({relative_text(change)})"
    if moved and change.delta:
        return f"{arrow} ({relative_text(change)}, within noise)"
    return value_text(change.metric, change.after)


def _spread_text(change: Change) -> str:
    sa, sb = change.spread_before, change.spread_after
    if sa is None or sb is None:
        return "no spread recorded"
    return f"runs {sa.low:.4g}–{sa.high:.4g} → {sb.low:.4g}–{sb.high:.4g} ms"


def _tuning_text(change: TuningChange) -> str:
    before = change.state_before or "-"
    if before == "tuned" and change.speedup_before:
        before += f" {change.speedup_before:.2f}x"
    line = f"tuning {before} → {change.state_after or '-'}"
    if change.lost:
        line += " (lost its tuned schedule)"
    if change.regression:
        line += f"; beyond {', '.join(r.text for r in change.rules)}"
    return line


def verdict_text(change: Change) -> str:
    """One line saying why a change is a regression (or how it changed)."""
    if isinstance(change, TuningChange):
        return _tuning_text(change)
    line = f"{METRIC_WORDS[change.metric]} {change_text(change, moved=True)}"
    if change.metric == "time" and change.known:
        line += f"; {_spread_text(change)}"
    if change.regression:
        line += f"; beyond {', '.join(r.text for r in change.rules)}"
    return line


def row_title(row: Row) -> str:
    """``op 2 FULLY_CONNECTED decoder/output`` or ``whole model`` (plain text)."""
    if row.scope == "model":
        return "whole model"
    return f"{row.label} {row.opcode} {row.name}".rstrip()


def _sides(gate: Gate) -> tuple[str, str]:
    return str(gate.comparison.a.root), str(gate.comparison.b.root)


# -- terminal -------------------------------------------------------------------------------
def _printable(text: str) -> str:
    """One line of a terminal or CI log: a name's line breaks, escape sequences and other
    unprintable characters written as escapes (``\\n``, ``\\x1b``), so none can forge a line."""
    return one_line(text)


def summary(gate: Gate) -> list[str]:
    """The verdict for the terminal, after the comparison table (or alone with --output)."""
    lines = [f"note: {n}" for n in gate.notes]
    checked = f"{len(gate.layers)} layers and the whole model"
    if not gate.failed:
        lines.append(f"fail-on {gate.spec}: no regression ({checked} checked; {gate.clock})")
        return lines
    regressions = gate.regressions
    count = sum(len(r.regressions) for r in regressions)
    lines.append(
        f"fail-on {gate.spec}: {count} regression{'s' if count != 1 else ''} ({checked} checked; {gate.clock})"
    )
    for row in regressions:
        for change in row.regressions:
            lines.append(f"  REGRESSION {_printable(row_title(row))}: {verdict_text(change)}")
    return lines


# -- Markdown -------------------------------------------------------------------------------
def _md_title(row: Row) -> str:
    if row.scope == "model":
        return "**whole model**"
    return f"{row.label} {md.cell(row.opcode)} {md.cell(row.name)}"


def _md_cell(change: Change | None, row: Row) -> str:
    # numbers and fixed words only: nothing to escape
    if change is None:
        return ""
    if isinstance(change, TuningChange):
        text = _tuning_text(change).removeprefix("tuning ").split(";")[0]
    else:
        text = change_text(change, moved=row.scope == "model")
    return f"**{text}**" if change.regression else text


def _md_status(row: Row) -> str:
    if row.regressions:
        return "❌ regression"
    if row.changed:
        grown = [
            c for c in row.changes.values() if c.changed and (c.delta > 0 or (isinstance(c, TuningChange) and c.lost))
        ]
        return "changed" if grown else "improved"
    return ""


def _md_row(row: Row, metrics: list[str]) -> str:
    cells = [_md_status(row), _md_title(row), *(_md_cell(row.changes.get(m), row) for m in metrics)]
    return "| " + " | ".join(cells) + " |"


def markdown(gate: Gate, limit: int = MARKDOWN_ROWS) -> str:
    """A Markdown report for a pull-request comment: the verdict, then a table of the layers
    that changed (regressions first, largest growth first), before → after and by how much,
    with the whole model in the last row."""
    comp = gate.comparison
    a_info, b_info = comp.to_json()["a_info"], comp.to_json()["b_info"]
    metrics = [m for m in ("time", "code", "workspace") if m != "time" or gate.timed]
    if any("tuning" in r.changes for r in gate.layers):
        metrics.append("tuning")
    regressions = gate.regressions
    layer_regressions = [r for r in regressions if r.scope == "layer"]
    others = sorted(
        (r for r in gate.layers if r.changed and not r.regressions), key=lambda r: (-r.severity(), r.op_index)
    )
    count = sum(len(r.regressions) for r in regressions)
    if gate.rules:
        verdict = (
            f"❌ {count} cost regression{'s' if count != 1 else ''}" if gate.failed else "✅ no cost regression"
        ) + f" beyond {md.code(gate.spec)}"
    else:
        verdict = "Cost changes"
    out = [
        f"### {verdict}",
        "",
        f"BASE {md.code(os.path.basename(_sides(gate)[0]))} ({md.code(a_info['model'] or '?')}, target "
        f"{md.code(a_info['target'] or '?')}) → NEW {md.code(os.path.basename(_sides(gate)[1]))} "
        f"({md.code(b_info['model'] or '?')}, target {md.code(b_info['target'] or '?')}); "
        f"{gate.clock}.",
        "",
    ]
    shown = layer_regressions + others[:limit]
    head = ["", "layer", *(METRIC_WORDS[m] for m in metrics)]
    out.append("| " + " | ".join(head) + " |")
    out.append("|" + "---|" * len(head))
    out += [_md_row(r, metrics) for r in shown]
    out.append(_md_row(gate.model, metrics))
    out.append("")
    unchanged = len(gate.layers) - len(layer_regressions) - len(others)
    tail = f"{len(layer_regressions) + len(others)} of {len(gate.layers)} layers changed, {unchanged} unchanged"
    if len(others) > limit:
        tail += f"; {len(others) - limit} more changed layers are not shown (`tvm-explorer compare --json` lists all)"
    out.append(tail + ".")
    if gate.timed:
        out.append(
            "A time change counts only where every run of one bundle was slower than every run of the other, "
            "and by more than 1 µs."
        )
    for side, role in (("only_a", "BASE"), ("only_b", "NEW")):
        left = getattr(comp, side)
        if left:
            names = ", ".join(f"{gate.unit} {c.layer.op_index} {md.cell(c.name)}" for c in left)
            out.append(f"Only in {role}: {names}.")
    for note in gate.notes:
        out.append(f"Note: {md.text(note)}.")
    return "\n".join(out) + "\n"


# -- JUnit XML ------------------------------------------------------------------------------
def junit(gate: Gate) -> str:
    """A JUnit XML report: one test case per matched layer and one for the whole model, a
    ``failure`` for each regression; layers found in one bundle only are ``skipped``."""
    base, new = _sides(gate)
    cases: list[ET.Element] = []
    failures = skipped = 0
    for row in gate.rows:
        case = ET.Element(
            "testcase",
            classname="tvm-explorer.compare." + row.scope,
            name=inert_xml.line(row_title(row)),
            time="0",
        )
        for change in row.regressions:
            failures += 1
            failure = ET.SubElement(
                case, "failure", type="cost regression", message=inert_xml.line(verdict_text(change))
            )
            failure.text = inert_xml.text(f"{row_title(row)}\n{verdict_text(change)}\nBASE {base}\nNEW {new}")
        out = ET.SubElement(case, "system-out")
        out.text = inert_xml.text("\n".join(verdict_text(c) for c in row.changes.values() if c.known))
        cases.append(case)
    for side, role in (("only_a", "BASE"), ("only_b", "NEW")):
        for code in getattr(gate.comparison, side):
            skipped += 1
            case = ET.Element(
                "testcase",
                classname="tvm-explorer.compare.layer",
                name=inert_xml.line(f"{gate.unit} {code.layer.op_index} {code.layer.opcode} {code.name}"),
                time="0",
            )
            ET.SubElement(case, "skipped", message=f"only in {role}: not compared")
            cases.append(case)
    suites = ET.Element("testsuites", name="tvm-explorer compare", tests=str(len(cases)), failures=str(failures))
    suite = ET.SubElement(
        suites,
        "testsuite",
        name=inert_xml.line(f"cost regressions {os.path.basename(base)} -> {os.path.basename(new)}"),
        tests=str(len(cases)),
        failures=str(failures),
        errors="0",
        skipped=str(skipped),
        time="0",
    )
    props = ET.SubElement(suite, "properties")
    for key, value in (("fail_on", gate.spec), ("base", base), ("new", new), ("clock", gate.clock)):
        ET.SubElement(props, "property", name=key, value=inert_xml.line(value))
    suite.extend(cases)
    ET.indent(suites)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(suites, encoding="unicode") + "\n"

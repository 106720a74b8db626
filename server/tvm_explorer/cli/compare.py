"""The ``compare`` subcommand."""

from __future__ import annotations

import json
import sys
from typing import Any

from tvm_explorer.errors import EXIT_REGRESSION, ExplorerError, fail
from tvm_explorer.tablenames import NameColumn
from tvm_explorer.whole_files import write_whole


def _cost(side: dict) -> str:
    ms = (side.get("costs") or {}).get("time_ms")
    return f"{ms:.3f}" if isinstance(ms, (int, float)) else "-"


def _workspace(side: dict) -> str:
    from tvm_explorer.costs.table import size

    b = (side.get("costs") or {}).get("workspace_bytes")
    return size(b) if isinstance(b, int) else "-"


_KIND_NAMES = {"c": "C", "cuda": "CUDA", "ll": "LLVM IR"}


def _across_kinds(result: dict, rows: list[dict], names: NameColumn) -> list[str]:
    """The table of two bundles whose code is of different kinds: kernels, time and workspace
    per layer, no code lines (C lines and LLVM IR lines are not one measure)."""
    kinds = result["code_kinds"]
    out = [
        f"Code size and code not compared: different code kinds (A: {_KIND_NAMES.get(kinds['a'] or '', 'no code')}, "
        f"B: {_KIND_NAMES.get(kinds['b'] or '', 'no code')}); compared per layer: kernels, time, workspace"
    ]
    out.append(
        f"{'op':>4}  {'opcode':18} {'name':40} {'A kern':>6} {'B kern':>6} {'A ms':>8} {'B ms':>8} "
        f"{'A workspace':>11} {'B workspace':>11}"
    )
    for r in rows:
        where = f"{r['subgraph']}:{r['op_index']}" if r["subgraph"] else str(r["op_index"])
        out.append(
            f"{where:>4}  {r['opcode'][:18]:18} {names.show(r['name']):40} {len(r['a']['kernels']):>6} "
            f"{len(r['b']['kernels']):>6} {_cost(r['a']):>8} {_cost(r['b']):>8} {_workspace(r['a']):>11} "
            f"{_workspace(r['b']):>11}"
        )
    out.append(f"\n{len(rows)} layers matched (different code kinds: code not compared)")
    return out


def _table(result: dict) -> list[str]:
    """The comparison as the text table."""
    out = []
    for side in ("a", "b"):
        info = result[f"{side}_info"]
        opts = "--exact-origins" if info["options"].get("exact_origins") else ""
        out.append(
            f"{side.upper()}: {result[side]}  ({info['model']}, target {info['target']}"
            f"{', ' + opts if opts else ''}, TVM {info['tvm']})"
        )
    how = (
        "the same model (sha256): layers matched by index"
        if result["matched_by"] == "sha256"
        else "different models: layers matched by TF layer name and opcode"
    )
    out.append(f"Compared as {how}")
    kind = _KIND_NAMES.get((result.get("code_kinds") or {}).get("a") or "", "")
    if result.get("code_compared") and kind:
        out.append(f"Code lines: {kind} lines, counted as tvm-explorer costs counts them")
    out.append("")
    rows = result["layers"]
    show_cost = any("costs" in r["a"] or "costs" in r["b"] for r in rows)
    names = NameColumn((r["name"] for r in rows), 40)
    note = names.note()
    if note:
        out.append(note)
    if result.get("code_compared") is False:
        return out + _across_kinds(result, rows, names) + _tuning(rows, names) + _unmatched(result)
    head = f"{'op':>4}  {'opcode':18} {'name':40} {'A lines':>8} {'B lines':>8} {'delta':>7}"
    head += f" {'A ms':>8} {'B ms':>8}" if show_cost else ""
    out.append(head + "  code")
    for r in rows:
        where = f"{r['subgraph']}:{r['op_index']}" if r["subgraph"] else str(r["op_index"])
        delta = r["b"]["code_lines"] - r["a"]["code_lines"]
        line = (
            f"{where:>4}  {r['opcode'][:18]:18} {names.show(r['name']):40} {r['a']['code_lines']:>8} "
            f"{r['b']['code_lines']:>8} {delta:>+7}"
        )
        if show_cost:
            line += f" {_cost(r['a']):>8} {_cost(r['b']):>8}"
        mark = "changed" if r["changed"] else "same"
        if r["kernels_changed"]:
            mark += f" (kernels {', '.join(r['a']['kernels']) or '-'} -> {', '.join(r['b']['kernels']) or '-'})"
        grew = (r.get("machine") or {}).get("grew")
        if grew:
            mark += f"; machine code: {', '.join(grew)}"
        out.append(f"{line}  {mark}")
    changed = sum(bool(r["changed"]) for r in rows)
    out.append(f"\n{len(rows)} layers matched, {changed} with changed code")
    grown = [r for r in rows if (r.get("machine") or {}).get("grew")]
    if grown:
        out.append(
            f"{len(grown)} layers whose machine code needs more registers or spills more (--sass): "
            + "; ".join(f"op {r['op_index']} {r['opcode']} ({', '.join(r['machine']['grew'])})" for r in grown[:8])
        )
    return out + _tuning(rows, names) + _unmatched(result)


def _tuning_cell(side: dict) -> str:
    state = side["state"] or "-"
    return f"{state} {side['speedup']:.2f}x" if side.get("speedup") else state


def _tuning(rows: list[dict], names: NameColumn) -> list[str]:
    """Per layer, what tuning did on each side (tuning.json) and its kernels' measured time."""
    from tvm_explorer.compare.tuning import lost_tuned_schedule

    if not any("tuning" in r for r in rows):
        return []
    out = [
        "",
        "Tuning per layer (tuning.json; us: the layer's kernels as built, tuned or default, as each compile timed them)",
        f"{'op':>4}  {'opcode':18} {'name':40} {'A tuning':>20} {'B tuning':>20} {'A us':>9} {'B us':>9} {'B/A':>6}",
    ]
    lost = 0
    for r in rows:
        t = r["tuning"]
        where = f"{r['subgraph']}:{r['op_index']}" if r["subgraph"] else str(r["op_index"])
        ratio = "-" if t["time_ratio"] is None else f"{t['time_ratio']:.2f}"
        a_us, b_us = (("-" if v is None else f"{v:.2f}") for v in (t["a"]["us"], t["b"]["us"]))
        mark = ""
        if lost_tuned_schedule(t["a"]["state"], t["b"]["state"]):
            mark, lost = "  lost its tuned schedule", lost + 1
        out.append(
            f"{where:>4}  {r['opcode'][:18]:18} {names.show(r['name']):40} {_tuning_cell(t['a'])[:20]:>20} "
            f"{_tuning_cell(t['b'])[:20]:>20} {a_us:>9} {b_us:>9} {ratio:>6}{mark}"
        )
    if lost:
        out.append(f"{lost} layer(s) tuned in A lost their tuned schedule in B (--fail-on tuning fails on it)")
    return out


def _unmatched(result: dict) -> list[str]:
    out = []
    for side in ("a", "b"):
        left = result["unmatched"][side]
        if left:
            out.append(
                f"Only in {side.upper()}: " + "; ".join(f"op {u['op_index']} {u['opcode']} {u['name']}" for u in left)
            )
    return out


def _format(args) -> str:
    if args.json:
        if args.format not in (None, "json"):
            raise ExplorerError(f"--json and --format {args.format}: choose one output format")
        return "json"
    return args.format or "text"


def _write(path: str, text: str) -> None:
    """Write ``text`` to ``path`` whole or not at all."""
    write_whole(path, text.encode("utf-8", errors="backslashreplace"), "report", shown=f"--output {path}")


def _run_compare(args) -> int:
    from tvm_explorer.compare.compare import compare

    try:
        fmt = _format(args)
        rules = None
        if args.fail_on is not None:
            from tvm_explorer.compare.rules import parse

            rules = parse(args.fail_on)
        comparison = compare(args.a, args.b)
        comparison.tuning()  # a damaged tuning.json: one message, here
        gate = None
        if rules is not None or fmt in ("markdown", "junit"):
            from tvm_explorer.compare.gate import judge

            gate = judge(comparison, rules or [])
    except ExplorerError as err:
        return fail(str(err))
    result = comparison.to_json()
    summary: list[str] = []
    if gate is not None and rules is not None:
        from tvm_explorer.compare.gate_report import summary as gate_summary

        summary = gate_summary(gate)
    if fmt == "json":
        printed: dict[str, Any] = {**result, "gate": gate.to_json()} if gate is not None else dict(result)
        text = json.dumps(printed, indent=1) + "\n"
    elif fmt == "markdown" and gate is not None:  # judged above for these two formats
        from tvm_explorer.compare.gate_report import markdown

        text = markdown(gate)
    elif fmt == "junit" and gate is not None:
        from tvm_explorer.compare.gate_report import junit

        text = junit(gate)
    else:
        text = "\n".join(_table(dict(result)) + ([""] + summary if summary else [])) + "\n"
    if args.output:
        try:
            _write(args.output, text)
        except ExplorerError as err:
            return fail(str(err))
        for line in summary:
            print(line)
    else:
        sys.stdout.write(text)
        if fmt in ("markdown", "junit"):
            for line in summary:
                print(line, file=sys.stderr)
    return EXIT_REGRESSION if gate is not None and gate.failed else 0


def add_parser(sub) -> None:
    """Register ``tvm-explorer compare``."""
    p = sub.add_parser(
        "compare", help="per layer, what changed between two bundles (targets, options, TVM versions, fp32 vs int8)"
    )
    p.add_argument("a", help="bundle A (BASE, the baseline, with --fail-on)")
    p.add_argument("b", help="bundle B (NEW, the candidate, with --fail-on)")
    p.add_argument("--json", action="store_true", help="the comparison as JSON (same as --format json)")
    p.add_argument(
        "--fail-on",
        metavar="RULES",
        help="exit 6 when a layer or the whole model grows beyond a rule and, for time, beyond the noise of "
        "its runs: RULE[,RULE...] with RULE = [model.|layer.]METRIC>+N UNIT, METRIC time|code|workspace "
        "(or memory), UNIT %% or ms/us/s, lines, B/KiB/MiB (e.g. 'time>+10%%,code>+20%%'; docs/compare.md)",
    )
    p.add_argument(
        "--format",
        choices=("text", "json", "markdown", "junit"),
        help="text (default), json, markdown (a table for a pull-request comment) or junit (JUnit XML: "
        "one test case per layer)",
    )
    p.add_argument("--output", metavar="FILE", help="write the report to FILE (atomically) instead of stdout")
    p.set_defaults(run=_run_compare)

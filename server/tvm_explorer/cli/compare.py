"""The ``compare`` subcommand."""

from __future__ import annotations

import json
import sys

from tvm_explorer.errors import ExplorerError
from tvm_explorer.tablenames import NameColumn


def _cost(side: dict) -> str:
    ms = (side.get("costs") or {}).get("time_ms")
    return f"{ms:.3f}" if isinstance(ms, (int, float)) else "-"


def _run_compare(args) -> int:
    from tvm_explorer.compare.compare import compare

    try:
        result = compare(args.a, args.b).to_json()
    except ExplorerError as err:
        print(f"tvm-explorer: error: {err}", file=sys.stderr)
        return 2
    if args.json:
        print(json.dumps(result, indent=1))
        return 0
    for side in ("a", "b"):
        info = result[f"{side}_info"]
        opts = "--exact-origins" if info["options"].get("exact_origins") else ""
        print(
            f"{side.upper()}: {result[side]}  ({info['model']}, target {info['target']}"
            f"{', ' + opts if opts else ''}, TVM {info['tvm']})"
        )
    how = (
        "the same model (sha256): layers matched by index"
        if result["matched_by"] == "sha256"
        else "different models: layers matched by TF layer name and opcode"
    )
    print(f"Compared as {how}\n")
    rows = result["layers"]
    show_cost = any("costs" in r["a"] or "costs" in r["b"] for r in rows)
    names = NameColumn((r["name"] for r in rows), 40)
    if names.note():
        print(names.note())
    head = f"{'op':>4}  {'opcode':18} {'name':40} {'A lines':>8} {'B lines':>8} {'delta':>7}"
    head += f" {'A ms':>8} {'B ms':>8}" if show_cost else ""
    print(head + "  code")
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
        print(f"{line}  {mark}")
    changed = sum(r["changed"] for r in rows)
    print(f"\n{len(rows)} layers matched, {changed} with changed code")
    for side in ("a", "b"):
        left = result["unmatched"][side]
        if left:
            print(
                f"Only in {side.upper()}: " + "; ".join(f"op {u['op_index']} {u['opcode']} {u['name']}" for u in left)
            )
    return 0


def add_parser(sub) -> None:
    """Register ``tvm-explorer compare``."""
    p = sub.add_parser(
        "compare", help="per layer, what changed between two bundles (targets, options, TVM versions, fp32 vs int8)"
    )
    p.add_argument("a", help="bundle A")
    p.add_argument("b", help="bundle B")
    p.add_argument("--json", action="store_true")
    p.set_defaults(run=_run_compare)

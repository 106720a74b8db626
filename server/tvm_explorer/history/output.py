"""A layer's history as ``tvm-explorer history`` prints it: a table, each step's layer-only
diff, and the JSON of ``--json`` (docs/navigation.md, "Layer history")."""

from __future__ import annotations

import difflib
from typing import Any

from tvm_explorer.history.code import LayerCode
from tvm_explorer.history.steps import History, Step
from tvm_explorer.navigation.view import BundleView

GAP = "…"
"""The line shown between two pieces of a layer's code that are not next to each other."""


def shown_lines(code: LayerCode) -> list[str]:
    """The layer's lines as a diff side shows them: its pieces, ``GAP`` between two."""
    out: list[str] = []
    for i, (_, _, text) in enumerate(code.pieces):
        if i:
            out.append(GAP)
        out.extend(text.split("\n"))
    return out


def unified_diff(step: Step, context: int = 2) -> str:
    """The step's layer-only diff (``before`` → ``after``, only the layer's lines)."""
    lines = difflib.unified_diff(
        shown_lines(step.before),
        shown_lines(step.after),
        fromfile=step.before.path,
        tofile=step.after.path,
        n=context,
        lineterm="",
    )
    return "\n".join(lines)


def line_spans(view: BundleView, code: LayerCode) -> list[list[int]]:
    """``[[first, last], ...]``: the 1-based lines of each piece of the layer's code."""
    if code.empty:
        return []
    lines = view.line_index(code.path, "utf-32")
    out = []
    for start, end, _ in code.pieces:
        out.append([lines.position(start)[0] + 1, lines.position(end)[0] + 1])
    return out


def layer_json(layer) -> dict[str, Any]:
    """A layer as the history's ``layers`` list it."""
    return {
        "id": layer.id,
        "subgraph": layer.subgraph,
        "op_index": layer.op_index,
        "opcode": layer.opcode,
        "name": layer.name,
    }


def history_json(view: BundleView, history: History, diffs: bool = False) -> dict[str, Any]:
    """The JSON of ``tvm-explorer history --json`` (``diffs``: each step's unified diff too)."""
    steps = []
    for i, step in enumerate(history.steps):
        entry: dict[str, Any] = {
            "pass": {"index": step.pass_index, "name": step.pass_name, "stage": step.stage},
            "summary": step.summary,
            "changes": list(step.changes),
            "lines": {
                "before": step.before.line_count,
                "after": step.after.line_count,
                "added": step.added,
                "removed": step.removed,
            },
            "before": {"path": step.before.path, "lines": line_spans(view, step.before)},
            "after": {"path": step.after.path, "lines": line_spans(view, step.after)},
            "marks": [m.kind for m in history.marks_of(i)],
        }
        if diffs:
            entry["diff"] = unified_diff(step)
        steps.append(entry)
    return {
        "bundle": str(view.root),
        "target": str(view.bundle.manifest.get("target", "")),
        "layers": [layer_json(lay) for lay in history.layers],
        "passes": history.passes,
        "hidden": max(0, history.passes - len(history.steps)),
        "steps": steps,
        "marks": [
            {
                "kind": m.kind,
                "pass": None
                if m.pass_index is None and not m.pass_name
                else {"index": m.pass_index, "name": m.pass_name},
                "step": m.step,
                "text": m.text,
            }
            for m in history.marks
        ],
    }


def history_text(view: BundleView, history: History, diffs: bool = False) -> str:
    """The table ``tvm-explorer history`` prints (``diffs``: each step's diff below it)."""
    from tvm_explorer.history.summary import layer_word

    who = ", ".join(f"{layer_word(lay)}{' ' + lay.name if lay.name else ''}" for lay in history.layers)
    target = view.bundle.manifest.get("target", "")
    head = (
        f"{who}: {len(history.steps)} of {history.passes} passes changed its code "
        f"({view.root.name}, target {target}); the others left it alone"
    )
    out = [head]
    width = max((len(s.pass_name) for s in history.steps), default=0)
    for i, step in enumerate(history.steps):
        index = "" if step.pass_index is None else f"#{step.pass_index}"
        out.append(f"  {index:>4}  {step.pass_name:<{width}}  {step.stage:<5}  {step.summary}")
        for mark in history.marks_of(i):
            out.append(f"  {'':>4}  {'':<{width}}  {'':<5}  ◆ {mark.text}")
        if diffs:
            diff = unified_diff(step)
            out.extend("        " + line for line in diff.split("\n") if diff)
    for mark in history.marks:
        if mark.step is None:
            out.append(f"  ◆ #{mark.pass_index} {mark.pass_name}: {mark.text}")
    if not history.steps:
        out.append("  no pass changed its code (it has no code in this bundle's IR)")
    return "\n".join(out)

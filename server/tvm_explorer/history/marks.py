"""The passes where a layer's code size, measured cost or numerics changed most.

- **size**: of the steps inside one stage (a Relax pass, a TIR pass: not the import nor code
  generation, which change the language), the one whose pass changed the number of the
  layer's lines most.
- **cost** (``costs.json`` with a measured profile): a compile measures the final code only,
  not the module after each pass, so the measured time is put on the pass that rewrote the
  code it is spent in most: of the steps inside one stage, the one that changed (added,
  rewrote or removed) the most lines of the kernels the layer's measured time is spent in.
- **numerics** (``bisect.json``): the pass ``tvm-explorer bisect`` found, when it recorded
  this layer's error before and after it — whether or not that pass changed the layer's own
  code (when not, the change came in through its inputs).
"""

from __future__ import annotations

from tvm_explorer.bundle.sections.bisect import layer_change
from tvm_explorer.history.code import LayerCode
from tvm_explorer.history.steps import History, Mark, Step
from tvm_explorer.history.summary import names, plural
from tvm_explorer.navigation.costs import cost_index
from tvm_explorer.navigation.view import BundleView


def marks(view: BundleView, history: History) -> list[Mark]:
    """The size, cost and numerics marks of ``history`` (each where it applies)."""
    out = []
    for found in (_size(history), _cost(view, history), _numerics(view, history)):
        if found is not None:
            out.append(found)
    return out


def _within_stage(step: Step) -> bool:
    return step.before.stage == step.after.stage and step.stage in ("relax", "tir")


def _mark(kind: str, text: str, steps: tuple[Step, ...], i: int) -> Mark:
    return Mark(kind, text, steps[i].pass_index, steps[i].pass_name, i)


def _size(history: History) -> Mark | None:
    best, best_delta = None, 0
    for i, step in enumerate(history.steps):
        if not _within_stage(step):
            continue
        delta = step.after.line_count - step.before.line_count
        if abs(delta) > abs(best_delta):
            best, best_delta = i, delta
    if best is None:
        return None
    step = history.steps[best]
    return _mark(
        "size",
        f"largest code-size change: {step.before.line_count} → {step.after.line_count} lines ({best_delta:+d})",
        history.steps,
        best,
    )


def _cost(view: BundleView, history: History) -> Mark | None:
    costs = cost_index(view.bundle)
    if costs is None or not costs.measured:
        return None
    rows = [r for lay in history.layers if (r := costs.by_layer.get(lay.id))]
    kernels = list(dict.fromkeys(k for r in rows for k in r["kernels"]))
    times = [r.get("time_ms") for r in rows]
    if not kernels or all(t is None for t in times):
        return None
    ms = sum(t for t in times if t is not None)
    variants = {k for name in kernels for k in (name, name + "_kernel")}
    best, best_score = None, 0
    for i, step in enumerate(history.steps):
        if not _within_stage(step):
            continue
        before = _units_by_key(step.before, variants)
        after = _units_by_key(step.after, variants)
        score = sum(len(text) for key, text in after.items() if before.get(key) != text) + sum(
            len(text) for key, text in before.items() if key not in after
        )
        if score > best_score:
            best, best_score = i, score
    if best is None:
        return None
    return _mark(
        "cost",
        f"measured {ms:.3g} ms in {names(kernels, 3)} (the final code): this pass rewrote that code most "
        f"({plural(best_score, 'statement or loop', 'statements and loops')} of it)",
        history.steps,
        best,
    )


def _units_by_key(code: LayerCode, functions: set[str]) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for u in code.units:
        if u.whole and u.kind in ("stmt", "loop", "block") and u.function in functions:
            out.setdefault(u.key, []).append(u.text)
    return out


def _numerics(view: BundleView, history: History) -> Mark | None:
    data = view.bundle.bisect
    culprit = data.get("culprit") if data else None
    if not data or not culprit:
        return None
    rows = [r for lay in history.layers if (r := layer_change(data, lay.subgraph, lay.op_index)) is not None]
    if not rows:
        return None
    index, name = culprit.get("index"), culprit["name"]
    step = next(
        (i for i, s in enumerate(history.steps) if s.pass_name == name and (index is None or s.pass_index == index)),
        None,
    )
    errors = ", ".join(f"{_err(r.get('before'))} → {_err(r.get('after'))}" for r in rows)
    where = "" if step is not None else " (it did not change this layer's code: the change came through its inputs)"
    return Mark("numerics", f"numerics changed here (bisect): max abs error {errors}{where}", index, name, step)


def _err(value) -> str:
    return "n/a" if value is None else f"{value:.3g}"

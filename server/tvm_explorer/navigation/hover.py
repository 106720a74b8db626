"""Hover text: where a piece of a bundle document came from, as short Markdown."""

from __future__ import annotations

from tvm_explorer.bundle.index import Range
from tvm_explorer.bundle.types import Document
from tvm_explorer.inert import markdown as md
from tvm_explorer.navigation.costs import hover_lines as cost_lines
from tvm_explorer.navigation.costs import kernel_of
from tvm_explorer.navigation.layer_hover import container_line, layer_lines, shared_kernel_lines
from tvm_explorer.navigation.machine import hover_line as machine_line
from tvm_explorer.navigation.memory import hover_lines as memory_lines
from tvm_explorer.navigation.numerics import bisect_lines, numerics_lines
from tvm_explorer.navigation.places import lens_summary
from tvm_explorer.navigation.provenance import layers_at
from tvm_explorer.navigation.view import BundleView, Keep, keep_all

MAX_LAYERS = 6  # layers whose numerics a hover lists
STAGE_NAMES = {"model": "Model", "relax": "Relax", "tir": "TIR", "code": "Generated code"}


def hover(view: BundleView, path: str, offset: int, keep: Keep = keep_all) -> tuple[str, Range] | None:
    """Markdown describing the text at ``offset`` and the range it describes, or None. Every
    string from the bundle is escaped (``markdown.text``/``markdown.code``)."""
    ranges = view.enclosing(path, offset, keep)
    doc = view.bundle.document(path)
    if not ranges or doc is None:
        return None
    origins = layers_at(view, path, offset, keep)
    lines = layer_lines(view, origins, doc.stage == "model")
    if doc.stage != "model":
        container = container_line(view, path, ranges, {o.layer.id for o in origins})
        if container:
            lines.append("\n" + container)
    if doc.stage == "model" and len(origins) == 1:
        lid = origins[0].layer.id
        if view.layer_map.model_places.get(lid):
            lines.append(f"\nEnded up in {lens_summary(view, lid)}.")
        shared = shared_kernel_lines(view, lid)
        if shared:
            lines.append("\n" + "\n\n".join(shared))
    lines.extend(numerics_lines(view, origins[:MAX_LAYERS], doc.stage == "model"))
    lines.extend(cost_lines(view.bundle, [o.layer.id for o in origins], kernel_of(ranges)))
    if doc.stage == "relax":
        lines.extend(memory_lines(view.bundle, path, ranges))
    lines.extend(bisect_lines(view, path, origins[:MAX_LAYERS]))
    lines.append("\n---\n" + stage_line(view, doc))
    schedule = _schedule_lines(view, ranges)
    if schedule:
        lines[-1] += "  "  # a line break in Markdown: the stage and the schedule are two lines
        lines.append("  \n".join(schedule))
    machine = machine_line(view.bundle, ranges)
    if machine:
        lines.append("\n" + machine)
    return "\n".join(lines), ranges[0]


def stage_line(view: BundleView, doc: Document) -> str:
    """Which stage and pass a document is, e.g. "TIR after pass 23 `FlattenBuffer`"."""
    manifest = view.bundle.manifest
    if doc.stage == "model":
        model = manifest.get("model", {})
        name = model.get("file", "") if isinstance(model, dict) else ""
        return f"Model document{f' of {md.code(name)}' if name else ''}"
    if doc.stage == "code" and doc.source is not None:
        return f"Machine code (SASS) compiled from {md.code(doc.source)}, {md.code(doc.path)}"
    if doc.stage == "code":
        return f"Generated code (target {md.code(manifest.get('target', '?'))}), {md.code(doc.path)}"
    passes = [
        p for p in manifest.get("passes", ()) if isinstance(p, dict) and p.get("after") == doc.path and p.get("changed")
    ]
    stage = STAGE_NAMES.get(doc.stage, doc.stage)
    if not passes:
        return f"{stage}, {md.code(doc.path)}"
    last = passes[-1]
    return f"{stage} after pass {md.text(last.get('index'))} {md.code(last.get('name'))}"


def _schedule_lines(view: BundleView, ranges: list[Range]) -> list[str]:
    """The schedule step that made the innermost traced loop, and for a kernel MetaSchedule
    tuned, what the tuning ledger measured for it; empty where no loop is traced."""
    for rng in ranges:
        if rng.link and rng.link.startswith("trace:"):
            primfunc, _, step = rng.link[len("trace:") :].rpartition(":")
            trace = trace_entry(view, primfunc)
            rule = f", rule {md.code(trace['rule'])}" if trace and trace.get("rule") else ""
            where = f" in {md.code(trace['path'])}" if trace and trace.get("path") else ""
            tuned = trace is not None and trace.get("rule") == "MetaSchedule"
            ledger = _ledger_line(view, primfunc) if tuned else None
            if tuned:
                rule = ", tuned by MetaSchedule"
            if not step and tuned:
                made = f"Tuned by MetaSchedule (the tuning database's best schedule); trace{where}"
            elif not step:
                made = f"Scheduled by dlight{rule.replace(', rule', ' rule')}; trace{where}"
            else:
                what = "Loop" if rng is ranges[0] else "Enclosing loop"
                text = ""
                if trace and isinstance(trace.get("step_text"), dict) and trace["step_text"].get(step):
                    text = f": {md.code(trace['step_text'][step])}"
                made = f"{what} created by schedule step {md.text(step)} of {md.code(primfunc)}{where}{rule}{text}"
            return [made, ledger] if ledger else [made]
    return []


def _ledger_line(view: BundleView, kernel_name: str) -> str | None:
    """What the tuning ledger measured for a tuned kernel: its time beside the default
    schedule's (``tuning.json``; nothing when it is damaged: costs say so)."""
    from tvm_explorer.bundle.sections.tuning import kernel_line
    from tvm_explorer.errors import BundleError

    try:
        doc = view.bundle.tuning()
    except BundleError:
        return None
    kernel = next((k for k in doc["kernels"] if k["kernel"] == kernel_name), None) if doc else None
    return f"Tuning ledger: {md.text(kernel_line(kernel))}" if kernel else None


def trace_entry(view: BundleView, primfunc: str) -> dict | None:
    """The manifest's trace record of a PrimFunc, or None."""
    for trace in view.bundle.manifest.get("traces", ()) or ():
        if isinstance(trace, dict) and trace.get("primfunc") == primfunc:
            return trace
    return None

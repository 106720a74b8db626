"""Hover text: where a piece of a bundle document came from, as short Markdown."""

from __future__ import annotations

from ..bundle.index import Range
from ..bundle.reader import Document, Origin
from .provenance import LayerReach, layers_at
from .sources import layer_caption
from .view import BundleView, Keep, keep_all

MAX_LAYERS = 6
STAGE_NAMES = {"model": "Model", "relax": "Relax", "tir": "TIR", "code": "Generated code"}


def hover(view: BundleView, path: str, offset: int, keep: Keep = keep_all) -> tuple[str, Range] | None:
    """Markdown describing the text at ``offset`` and the range it describes, or None."""
    ranges = view.enclosing(path, offset, keep)
    doc = view.bundle.document(path)
    if not ranges or doc is None:
        return None
    origins = layers_at(view, path, offset, keep)
    lines = [_origin_line(o, doc.stage == "model") for o in origins[:MAX_LAYERS]]
    if len(origins) > MAX_LAYERS:
        lines.append(f"- … and {len(origins) - MAX_LAYERS} more layers")
    if not lines:
        lines.append("_No origin layer recorded here._")
    if doc.stage == "model" and len(origins) == 1:
        lid = origins[0].layer.id
        entry = view.layer_map.model_places.get(lid)
        if entry:
            places = view.layer_map.places.get(lid, [])
            lines.append(f"\nEnded up in {LayerReach(origins[0].layer, entry[0], places).summary()}.")
    lines.append("\n---\n" + stage_line(view, doc))
    step = _schedule_step(view, ranges)
    if step:
        lines.append(step)
    return "\n".join(lines), ranges[0]


def _origin_line(origin: Origin, in_model: bool) -> str:
    layer = origin.layer
    role = "" if in_model else (" — layer output" if origin.is_output else " — part of layer")
    head = f"- **{layer.opcode}** layer {layer.id} (subgraph {layer.subgraph}, op {layer.op_index}){role}"
    caption = layer_caption(layer)
    if caption:
        head += f"  \n  {caption}"
    outs = []
    for i, name in enumerate(layer.outputs):
        typ = layer.output_types[i] if i < len(layer.output_types) else {}
        shape = typ.get("shape") if isinstance(typ, dict) else None
        dtype = typ.get("dtype", "") if isinstance(typ, dict) else ""
        shape_text = "×".join(str(d) for d in shape) if isinstance(shape, list) else "?"
        outs.append(f"`{name}` {shape_text} {dtype}".rstrip())
    if outs:
        head += "  \n  → " + ", ".join(outs)
    return head


def stage_line(view: BundleView, doc: Document) -> str:
    """Which stage and pass a document is, e.g. "TIR after pass 23 `FlattenBuffer`"."""
    manifest = view.bundle.manifest
    if doc.stage == "model":
        model = manifest.get("model", {})
        name = model.get("file", "") if isinstance(model, dict) else ""
        return f"Model document{f' of `{name}`' if name else ''}"
    if doc.stage == "code":
        return f"Generated code (target `{manifest.get('target', '?')}`), `{doc.path}`"
    passes = [
        p
        for p in manifest.get("passes", ())
        if isinstance(p, dict) and p.get("after") == doc.path and p.get("changed")
    ]
    stage = STAGE_NAMES.get(doc.stage, doc.stage)
    if not passes:
        return f"{stage}, `{doc.path}`"
    last = passes[-1]
    return f"{stage} after pass {last.get('index')} `{last.get('name')}`"


def _schedule_step(view: BundleView, ranges: list[Range]) -> str | None:
    for rng in ranges:
        if rng.link and rng.link.startswith("trace:"):
            primfunc, _, step = rng.link[len("trace:") :].rpartition(":")
            trace = trace_entry(view, primfunc)
            rule = f", rule `{trace['rule']}`" if trace and trace.get("rule") else ""
            where = f" in `{trace['path']}`" if trace and trace.get("path") else ""
            if not step:
                return f"Scheduled by dlight{rule.replace(', rule', ' rule')}; trace{where}"
            what = "Loop" if rng is ranges[0] else "Enclosing loop"
            text = ""
            if trace and isinstance(trace.get("step_text"), dict) and trace["step_text"].get(step):
                text = f": `{trace['step_text'][step]}`"
            return f"{what} created by schedule step {step} of `{primfunc}`{where}{rule}{text}"
    return None


def trace_entry(view: BundleView, primfunc: str) -> dict | None:
    """The manifest's trace record of a PrimFunc, or None."""
    for trace in view.bundle.manifest.get("traces", ()) or ():
        if isinstance(trace, dict) and trace.get("primfunc") == primfunc:
            return trace
    return None

"""The bisect report (``bisect.json``): the search's findings on a finished compile — the
culprit pass, the first layer it changed, the errors before and after it, every snapshot
built — and its text rendering."""

from __future__ import annotations

import os


def _error_json(err) -> float | None:
    import math

    return None if err is None or not math.isfinite(err.max_abs) else err.max_abs


def bisect_compiled(
    model,
    target: str,
    inputs: dict,
    session,
    recorder,
    pipeline_spec,
    reference,
    passes: list[dict] | None,
    executable=None,
) -> dict:
    """Run the search on a finished compile; the bisect JSON."""
    from tvm_explorer.bisect.search import Bisector, first_changed_layer
    from tvm_explorer.capture.custom_pipeline import make_pipeline
    from tvm_explorer.capture.pipeline import make_target
    from tvm_explorer.numerics.reference import describe, quantization_of, run_reference

    ref = run_reference(reference, inputs) if reference else None
    quant = quantization_of(model.path)
    pipeline = make_pipeline(pipeline_spec, make_target(target)) if pipeline_spec else None
    announce = (lambda what: session.progress.starting("run", what)) if session.progress is not None else None
    b = Bisector(
        model,
        target,
        inputs,
        session.origins,
        recorder,
        session.final_relax,
        pipeline,
        ref,
        quant,
        announce=announce,
        executable=executable,
    )
    culprit = layer = None
    layers: list = []
    before_err = after_err = None
    note = None
    found = b.find_relax()
    if found is not None:
        lo, hi = found
        snap = b.snapshots[hi]
        culprit = {"index": snap.index, "name": snap.name, "stage": "relax"}
        after = b.relax(hi)
        after_err = after.error
        if lo >= 0:
            before = b.relax(lo)
            before_err = before.error
            before_layers = before.observed()
        else:
            assert ref is not None, "last good is the baseline itself (-1) only with a reference"
            before_err = None
            before_layers = {
                (lay.id, j): ref.tensors[t.name]
                for lay in model.layers
                for j, t in enumerate(lay.outputs)
                if t.name in ref.tensors
            }
        layer = first_changed_layer(model, before_layers, after.observed(), quant)
        layers = layer_errors(model, before_layers if lo >= 0 else None, after.observed(), b, quant)
        if hi == 0:
            note = (
                "the imported module already differs from the reference: the frontend "
                "conversion (or the reference) is where the results depart"
            )
        if hi - lo > 1 and lo >= 0:
            skipped = [b.snapshots[k].name for k in range(lo + 1, hi)]
            note = f"snapshots after {', '.join(skipped)} could not be built with the minimal lowering"
    else:
        name, real = b.find_tir()
        assert real.error is not None, "find_tir raises when the compiled model did not run"
        if name is not None:
            index = next((p["index"] for p in passes or () if p.get("stage") == "tir" and p.get("name") == name), None)
            culprit = {"index": index, "name": name, "stage": "tir"}
            fixed = next(e for e in reversed(b.tir_done) if e.name == name and e.error is not None)
            before_err, after_err = fixed.error, real.error
            layer = first_changed_layer(model, fixed.observed(), real.observed(), quant)
            layers = layer_errors(model, fixed.observed(), real.observed(), b, quant)
        elif real.error.diverges:
            note = (
                "the compiled model differs from the baseline, but no single Relax snapshot or "
                "TIR pass that can be left out explains it"
            )
    final = b.real()
    if culprit is None and final.error is not None:
        after_err = final.error  # no culprit: what the whole pipeline ends with
    snapshots = [
        {
            "index": e.index,
            "name": e.name,
            "max_abs": _error_json(e.error),
            **({"problem": e.problem} if e.problem else {}),
        }
        for _k, e in sorted(b.relax_done.items())
    ]
    diff = None
    if culprit is not None and passes:
        entry = next((p for p in passes if p.get("index") == culprit["index"]), None)
        if entry:
            diff = {"before": entry.get("before"), "after": entry.get("after")}
    first = None
    layer_info = None
    if layer is not None:
        lay, err = layer
        first = {"subgraph": lay.subgraph, "op_index": lay.op_index}
        layer_info = {"opcode": lay.opcode, "name": lay.name, "max_abs": _error_json(err), "cosine": err.cosine}
    return {
        "schema_version": 1,
        "model": os.path.basename(model.path),
        "target": target,
        "pipeline": pipeline_spec,
        "baseline": (describe(reference) if reference else "the imported module, built with the minimal lowering"),
        "culprit": culprit,
        "error_before": _error_json(before_err) if culprit else None,
        "error_after": _error_json(after_err),
        "error_final": _error_json(final.error),
        "first_divergence": first,
        "layer": layer_info,
        "diff": diff,
        "layers": layers,
        "snapshots": snapshots,
        "tir_builds": len(b.tir_done),
        "note": note,
    }


def layer_errors(model, before: dict | None, after: dict, bisector, quant: dict) -> list[dict]:
    """Per observed layer: its error against the baseline's layer output before and after the
    culprit (the baseline's layers: the import snapshot's run, or the reference's tensors)."""
    from tvm_explorer.numerics.compare import compare

    base = _baseline_layers(model, bisector)
    out = []
    for lay in model.layers:
        row = {"subgraph": lay.subgraph, "op_index": lay.op_index, "before": None, "after": None}
        for key, run in (("before", before), ("after", after)):
            errs = []
            for j, t in enumerate(lay.outputs):
                got, ref = (run or {}).get((lay.id, j)), base.get((lay.id, j))
                if got is not None and ref is not None:
                    errs.append(compare(got, ref, quant.get(t.name), quant.get(t.name)).max_abs)
            if errs:
                row[key] = max(errs)
        if row["before"] is not None or row["after"] is not None:
            out.append(row)
    return out


def _baseline_layers(model, bisector) -> dict:
    if bisector.reference is not None:
        return {
            (lay.id, j): bisector.reference.tensors[t.name]
            for lay in model.layers
            for j, t in enumerate(lay.outputs)
            if t.name in bisector.reference.tensors
        }
    first = bisector.relax(0)
    return first.run.observation.outputs if first.run is not None else {}


def format_report(data: dict, bundle: str | None) -> list[str]:
    """The text report."""
    from tvm_explorer.bundle.sections.numerics import unit

    lines = [
        f"{data['model']} ({data['target']}"
        f"{', pipeline ' + data['pipeline'] if data['pipeline'] else ''}) against {data['baseline']}"
    ]
    c = data["culprit"]
    fmt = lambda v: "n/a" if v is None else f"{v:.3g}"  # noqa: E731
    if c is None:
        lines.append(
            "No culprit: "
            + (data.get("note") or "no pass changes the results beyond the thresholds (docs/numerics.md)")
        )
        lines.append(f"  the compiled model's outputs, max abs error: {fmt(data.get('error_final'))}")
    else:
        where = f"pass {c['index']} " if c["index"] is not None else "pass "
        lines.append(f"Culprit: {c['stage']} {where}{c['name']}")
        lines.append(
            f"  model outputs, max abs error: {fmt(data['error_before'])} before it, "
            f"{fmt(data['error_after'])} after it, {fmt(data.get('error_final'))} in the "
            f"compiled model"
        )
        if data["layer"]:
            f = data["first_divergence"]
            lines.append(
                f"  first layer changed by it: {unit(data)} {f['op_index']} {data['layer']['opcode']} "
                f"{data['layer']['name']} (max abs {fmt(data['layer']['max_abs'])})"
            )
        if data["diff"] and bundle:
            lines.append(
                f"  its diff: {os.path.join(bundle, data['diff']['after'] or '')} (before: {data['diff']['before']})"
            )
        if data.get("note"):
            lines.append(f"  note: {data['note']}")
    lines.append("Snapshots built (Relax, minimal lowering):")
    for s in data["snapshots"]:
        err = "could not be built" if s["max_abs"] is None else f"max abs {s['max_abs']:.3g}"
        lines.append(f"  {s['index']:>4}  {s['name'][:40]:40} {err}")
    if data["tir_builds"]:
        lines.append(f"TIR rebuilds with passes left out: {data['tir_builds']}")
    return lines

"""The graph document: a bundle's model as nodes, tensor edges and scope groups, with every
per-layer figure the overlays color by and every place the layer panel lists. JSON, drawn by
the web app (``vscode-extension/src/graph/``) in VS Code and in ``tvm-explorer report``.
Shape: docs/graph.md, "The graph document"."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from tvm_explorer.bundle.sections.numerics import (
    FLOAT_REL_TOLERANCE,
    budget_lines,
    format_error,
    headline,
    layer_entry,
    unit,
)
from tvm_explorer.costs.table import flops_text, size
from tvm_explorer.graphview.places import layer_place_entries
from tvm_explorer.graphview.structure import (
    document_edges,
    document_groups,
    edges,
    folds,
    groups,
    io_id,
    read_structure,
    repetitions,
)
from tvm_explorer.graphview.types import GraphDocument, GraphNode, IONode, KernelInfo, NodeNumerics, Overlay, Tensor
from tvm_explorer.history.pipeline import pipeline_states
from tvm_explorer.navigation.costs import cost_index
from tvm_explorer.navigation.layer_facts import layer_facts
from tvm_explorer.navigation.numerics import hidden_hint
from tvm_explorer.navigation.view import BundleView, Place
from tvm_explorer.tablenames import shown_name

FORMAT = "tvm-explorer-graph"
VERSION = 1
STAGES = ("relax", "tir", "code")
T = TypeVar("T")

# Overlays the web app colors by: id, label, scale kind, unit.
OVERLAYS = (
    ("time", "Measured time", "linear", "ms"),
    ("code", "Code size", "linear", "lines"),
    ("workspace", "Workspace", "log", "bytes"),
    ("memory", "Live at the memory peak", "log", "bytes"),
    ("flops", "FLOPs", "log", "FLOP"),
    ("error", "Numerical error ÷ budget", "budget", "× budget"),
    ("kernels", "Kernels per layer", "linear", "kernels"),
    ("registers", "Registers per thread (SASS)", "linear", "registers"),
    ("coverage", "Provenance coverage", "category", ""),
    ("schedule", "Schedule kind", "category", ""),
    ("tuning", "Tuning (MetaSchedule)", "category", ""),
)


def graph_document(view: BundleView, places: bool = True, encoding: str = "utf-16") -> GraphDocument:
    """The graph document of a loaded bundle (``places``: with each layer's places and code
    excerpts; positions in ``encoding`` columns, as the editor counts them)."""
    bundle = view.bundle
    manifest = bundle.manifest
    raw_model = manifest.get("model")
    model: dict[str, Any] = raw_model if isinstance(raw_model, dict) else {}
    kind = str(model.get("kind", "tflite"))
    structure = read_structure(view)
    group_list, group_of = groups(view, structure)
    costs = cost_index(bundle)
    numerics = bundle.numerics
    at_peak, memory_note = _live_at_peak(bundle)
    machine = bundle.sass()
    machine_layers: dict[str, Any] = dict(machine["layers"]) if machine else {}
    schedules = _schedules(manifest)
    tuning, tuning_note = _tuning(bundle)
    docs_of = {stage: [doc.path for doc in bundle.documents if doc.stage == stage] for stage in STAGES}
    nodes: list[GraphNode] = []
    for layer in bundle.layers:
        facts = layer_facts(view, layer.id)
        cost = costs.by_layer.get(layer.id) if costs else None
        kernels = list(cost["kernels"]) if cost else []
        reached = [s for s in STAGES if any(view.layer_map.ranges(layer.id, path) for path in docs_of[s])]
        kinds = sorted({schedules.get(k, "default") for k in kernels})
        entry = layer_entry(numerics, layer.subgraph, layer.op_index) if numerics else None
        module, module_class = structure.modules.get(layer.id, ("", ""))
        node: GraphNode = {
            "id": str(layer.id),
            "subgraph": layer.subgraph,
            "op_index": layer.op_index,
            "opcode": layer.opcode,
            "name": shown_name(layer.name),
            "module": shown_name(module),
            "module_class": layer.module_class or module_class,
            "source": f"{layer.source[0]}:{layer.source[1]}" if layer.source else None,
            "group": group_of.get(layer.id),
            "attributes": dict(facts.options),
            "inputs": [_tensor(t) for t in facts.inputs],
            "outputs": [_tensor(t) for t in facts.outputs]
            or [
                {
                    "name": shown_name(n),
                    "type": _type(layer.output_types[i] if i < len(layer.output_types) else {}),
                    "const": False,
                }
                for i, n in enumerate(layer.outputs)
            ],
            "kernels": kernels,
            "metrics": {
                "time": cost.get("time_ms") if cost else None,
                "share": cost.get("share") if cost else None,
                "code": cost["code_lines"] + cost.get("shared_code_lines", 0) if cost else None,
                "workspace": cost["workspace_bytes"] if cost else None,
                "memory": at_peak.get(layer.id),
                "flops": cost.get("flops") if cost else None,
                "error": _error(entry),
                "kernels": len(kernels) if cost else None,
                "registers": machine_layers.get(str(layer.id), {}).get("registers"),
                "coverage": _coverage(reached),
                "schedule": (kinds[0] if len(kinds) == 1 else "mixed") if kinds else None,
                "tuning": tuning[layer.id][0] if layer.id in tuning else None,
            },
            "cost": costs.summary(cost) + (f" · {flops_text(flops)}" if (flops := cost.get("flops")) else "")
            if costs and cost
            else None,
            "numerics": _numerics(view, numerics, entry) if entry else None,
        }
        if layer.id in tuning:
            node["tuning"] = tuning[layer.id][1]
        if places:
            node["places"] = layer_place_entries(view, layer.id, encoding)
        nodes.append(node)
    io_nodes: list[IONode] = [
        {"id": io_id(io.kind, io.subgraph, io.name), "kind": io.kind, "name": shown_name(io.name), "type": io.type}
        for io in structure.io
    ]
    edge_list = edges(view, structure)
    folded = folds(
        [n["id"] for n in nodes],
        edge_list,
        {io["id"] for io in io_nodes if io["kind"] == "input"},
        {e.source for e in edge_list if e.target.startswith("out:")},
    )
    for node in nodes:
        node["fold"] = folded.get(node["id"])
    repeats = repetitions(group_list, group_of, {layer.id: layer.opcode for layer in bundle.layers})
    return {
        "format": FORMAT,
        "version": VERSION,
        "model": {
            "file": str(model.get("file", "")),
            "kind": kind,
            "unit": unit({"model": str(model.get("file", ""))}),
            "target": str(manifest.get("target", "")),
            "sha256": str(model.get("sha256", "")),
            "tool": tool if isinstance(tool := manifest.get("tool"), dict) else {},
            "created": str(manifest.get("created", "")),
        },
        "nodes": nodes,
        "io": io_nodes,
        "edges": document_edges(edge_list),
        "groups": document_groups(group_list, repeats),
        "overlays": _overlays(costs, numerics, costs_problem(bundle), memory_note, machine is not None, tuning_note),
        "kernels": _kernels(costs, schedules),
        "costs_note": costs.status_text()
        if costs
        else costs_problem(bundle) or "no costs recorded (recompile the bundle)",
        # The pass slider's data: per pass, the layers it touched, fused together, lowered.
        "pipeline": pipeline_states(view),
    }


def _memory_timeline(view: BundleView) -> dict[str, Any] | None:
    """The memory timeline picture's data (``navigation/memory_timeline.py``), its places as
    document paths and 0-based lines; None when the bundle has no memory.json (a damaged one
    says why)."""
    from tvm_explorer.errors import BundleError
    from tvm_explorer.navigation.memory_timeline import NoTimeline, timeline

    try:
        if view.bundle.memory() is None:
            return None
    except BundleError as err:
        return {"error": str(err)}

    def locate(place: Place) -> dict[str, Any]:
        line, _ = view.line_index(place.path, "utf-16").position(place.start)
        return {"path": place.path, "line": line}

    try:
        return dict(timeline(view, locate))
    except NoTimeline as err:
        return {"error": str(err)}


def report_sections(view: BundleView) -> dict[str, Any]:
    """What the report shows beside the graph: hot layers, numerics, and per pass its
    compile time and provenance coverage."""
    bundle = view.bundle
    costs = cost_index(bundle)
    hot = []
    if costs:
        for lay in costs.ranked()[:25]:
            hot.append(
                {
                    "id": str(lay["id"]),
                    "opcode": lay["opcode"],
                    "name": shown_name(lay["name"]),
                    "time_ms": lay.get("time_ms"),
                    "share": lay.get("share"),
                    "code_lines": lay["code_lines"],
                    "workspace": size(lay["workspace_bytes"]) if lay["workspace_bytes"] else "",
                    "kernels": list(lay["kernels"]),
                    "summary": costs.summary(lay),
                }
            )
    timed = {p["index"]: p for p in (costs.costs.get("passes", ()) if costs else ())}
    passes = []
    for entry in bundle.manifest.get("passes", ()) or ():
        if not isinstance(entry, dict):
            continue
        units, attributed = entry.get("units", 0), entry.get("attributed", 0)
        t = timed.get(entry["index"]) if isinstance(entry.get("index"), int) else None
        passes.append(
            {
                "index": entry.get("index"),
                "stage": str(entry.get("stage", "")),
                "name": str(entry.get("name", "")),
                "changed": bool(entry.get("changed")),
                "ms": t.get("ms") if t else None,
                "units": units if isinstance(units, int) else 0,
                "attributed": attributed if isinstance(attributed, int) else 0,
            }
        )
    numerics = bundle.numerics
    num = None
    if numerics:
        first = numerics.get("first_divergence")
        num = {
            "reference": numerics.get("reference", ""),
            "mode": numerics.get("mode", ""),
            "inputs": numerics.get("inputs", ""),
            "headline": headline(numerics),
            "budgets": budget_lines(numerics),
            "first_divergence": None
            if not first
            else next(
                (
                    str(lay.id)
                    for lay in bundle.layers
                    if (lay.subgraph, lay.op_index) == (first["subgraph"], first["op_index"])
                ),
                None,
            ),
            "layers": [
                {
                    "id": next(
                        (str(lay.id) for lay in [bundle.layer(e["subgraph"], e["op_index"])] if lay is not None), None
                    ),
                    "opcode": e["opcode"],
                    "name": shown_name(e["name"]),
                    "diverges": bool(e.get("diverges")),
                    "observed": bool(e.get("observed")),
                    "summary": format_error(e),
                }
                for e in numerics["layers"]
            ],
        }
    return {
        "memory": _memory_timeline(view),
        "hot_layers": hot,
        "passes": passes,
        "numerics": num,
        "problems": [str(p) for p in view.problems]
        + [str(e) for e in bundle.section_problems.values()]
        + [p for p in [costs_problem(bundle)] if p and p not in map(str, bundle.section_problems.values())],
    }


def costs_problem(bundle) -> str | None:
    """Why the bundle's ``costs.json`` cannot be used (damaged: the file and the field), or None."""
    try:
        bundle.costs()
    except Exception as err:  # noqa: BLE001 - any failure to read it is reported as the reason
        return str(err)
    return None


def _tensor(t) -> Tensor:
    out: Tensor = {"name": shown_name(t.name), "type": t.type_text, "const": t.const}
    if t.quantization:
        out["quantization"] = t.quantization
    return out


def _type(t: dict) -> str:
    return f"{t.get('dtype', '')}[{','.join(str(d) for d in t.get('shape') or ())}]"


def _error(entry) -> float | str | None:
    """The overlay's error figure: an observed layer's error relative to its own budget (1 =
    at the budget; an int8 layer 30 steps off within a budget of 45 steps is 0.67, not red);
    infinite errors count as the largest, layers not judged have none. Bundles written before
    budgets were recorded: steps over the step budget, else the max relative error over the
    float tolerance."""
    if not entry or not entry.get("observed") or entry.get("judged") is False:
        return None
    if "budget_ratio" in entry:
        ratio = entry.get("budget_ratio")
        return float(ratio) if ratio is not None else "inf"
    steps, budget = entry.get("steps"), entry.get("step_budget")
    if isinstance(steps, (int, float)) and isinstance(budget, (int, float)) and budget > 0:
        return float(steps) / float(budget)
    rel = entry.get("max_rel")
    return float(rel) / FLOAT_REL_TOLERANCE if rel is not None else "inf"


def _coverage(reached: list[str]) -> str:
    """How far the layer's provenance reaches: the generated code, TIR, Relax, or the model only."""
    if "code" in reached:
        return "to code"
    if "tir" in reached:
        return "to TIR"
    if "relax" in reached:
        return "to Relax"
    return "model only"


def _numerics(view: BundleView, data, entry) -> NodeNumerics:
    first = data.get("first_divergence")
    return {
        "summary": format_error(entry),
        "observed": bool(entry.get("observed")),
        "diverges": bool(entry.get("diverges")),
        "first": bool(first) and (first["subgraph"], first["op_index"]) == (entry["subgraph"], entry["op_index"]),
        "max_abs": entry.get("max_abs"),
        "max_rel": entry.get("max_rel"),
        "cosine": entry.get("cosine"),
        "hint": hidden_hint(view, data, entry),
        "reference": data.get("reference", ""),
    }


def _schedules(manifest: dict) -> dict[str, str]:
    """Kernel (PrimFunc) -> how it was scheduled: ``dlight <Rule>`` for GPU kernels dlight
    scheduled, ``MetaSchedule (tuned)`` for kernels a tuning database scheduled (the bundle's
    schedule traces); others keep TVM's default schedule."""
    out = {}
    for trace in manifest.get("traces", ()) or ():
        if isinstance(trace, dict) and isinstance(trace.get("primfunc"), str):
            rule = trace.get("rule", "")
            out[trace["primfunc"]] = "MetaSchedule (tuned)" if rule == "MetaSchedule" else f"dlight {rule}".strip()
    return out


def _kernels(costs, schedules: dict[str, str]) -> dict[str, KernelInfo]:
    if not costs:
        return {}
    return {
        name: {
            "layers": [str(i) for i in k["layers"]],
            "summary": costs.kernel_summary(name),
            "schedule": schedules.get(name, "default"),
        }
        for name, k in costs.kernels.items()
    }


def _live_at_peak(bundle) -> tuple[dict[int, int], str | None]:
    """Bytes of each layer's tensors held at the memory peak (``memory.json``; layers with
    none held there have no value), and why there are none (no or a damaged file)."""
    from tvm_explorer.bundle.sections.memory import held_at

    data, why = _section(bundle.memory, "no memory.json: recompile the bundle")
    if data is None:
        return {}, why
    step = data["peak"]["step"]
    if step is None:
        return {}, "the model's function calls nothing: no memory peak"
    out: dict[int, int] = {}
    for t in held_at(data, step)[1]:
        if t["layer"] is not None and t["bytes"]:
            out[t["layer"]] = out.get(t["layer"], 0) + t["bytes"]
    return out, None


def _tuning(bundle) -> tuple[dict[int, tuple[str, str]], str | None]:
    """Each layer's tuning (``tuning.json``): its overlay category and its kernels' lines; and
    why there are none."""
    from tvm_explorer.bundle.sections.tuning import layer_category, layer_lines, layer_states

    doc, why = _section(bundle.tuning, "not tuned: compile with --target llvm --tune TRIALS (docs/tuning.md)")
    if doc is None:
        return {}, why
    lines = layer_lines(doc)
    return {
        lid: (layer_category(word, speedup), lines.get(lid, "")) for lid, (word, speedup) in layer_states(doc).items()
    }, None


def _section(read: Callable[[], T | None], missing: str) -> tuple[T | None, str | None]:
    """A bundle section read with ``read``, or None and why: ``missing`` when the bundle has
    none, the damage when it is damaged."""
    from tvm_explorer.errors import BundleError

    try:
        data = read()
    except BundleError as err:
        return None, str(err)
    return (data, None) if data is not None else (None, missing)


def _overlays(
    costs,
    numerics,
    costs_damage: str | None,
    memory_note: str | None = None,
    machine: bool = False,
    tuning_note: str | None = "not tuned",
) -> list[Overlay]:
    why_costs = None if costs else costs_damage or "no costs.json: recompile the bundle"
    notes = {
        "memory": memory_note,
        "time": why_costs
        or (None if costs.measured else f"not measured: compile with --profile ({costs.status_text()})"),
        "code": why_costs,
        "workspace": why_costs,
        "flops": why_costs,
        "kernels": why_costs,
        "error": None if numerics else "no numerics: compile with --numerics (targets c, llvm)",
        "coverage": None,
        "schedule": why_costs,
        "registers": None if machine else "no machine code: compile with --target cuda --sass",
        "tuning": tuning_note,
    }
    return [
        {
            "id": oid,
            "label": label,
            "scale": scale,
            "unit": measure,
            "available": notes[oid] is None,
            "note": notes[oid],
        }
        for oid, label, scale, measure in OVERLAYS
    ]

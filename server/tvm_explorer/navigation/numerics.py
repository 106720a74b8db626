"""Numerics of a bundle (``numerics.json``) for the editor: hover lines, the rows of the
Numerics view, and the divergent layers to warn about. No protocol here."""

from __future__ import annotations

from dataclasses import dataclass

from tvm_explorer.bundle.sections.bisect import culprit_documents, layer_change
from tvm_explorer.bundle.sections.numerics import NumericsDocument, NumericsLayer, format_error, layer_entry, unit
from tvm_explorer.bundle.types import Origin
from tvm_explorer.inert import markdown as md
from tvm_explorer.navigation.view import BundleView, Place


@dataclass(frozen=True)
class NumericsRow:
    """One layer of the Numerics view: its entry and where it is in the model document, and
    for a layer not observed, why and what to do (``hidden_hint``)."""

    entry: NumericsLayer
    first: bool
    place: Place | None
    hint: str | None = None


def _kernel_of(view: BundleView, layer_id: int) -> tuple[str, list[int]] | None:
    """The generated function computing a layer and the other layers it computes."""
    from tvm_explorer.navigation.places import reference_map

    code = {d.path for d in view.bundle.documents if d.stage == "code"}
    for place in reference_map(view, [layer_id]):
        if place.path not in code:
            continue
        for rng in view.bundle.index(place.path).enclosing(place.start):
            if rng.kind == "primfunc":
                others = sorted(view.layer_map.layers_of_set[rng.origin_set] - {layer_id})
                return rng.key.partition(":")[2], others
    return None


def hidden_hint(view: BundleView, data: NumericsDocument, entry: NumericsLayer) -> str | None:
    """For a layer the build did not observe: the fused kernel that hid it (with the layers
    it shares it with) and ``--numerics-unfused``, which observes every layer."""
    if entry.get("observed"):
        return None
    layer = view.bundle.layer(entry["subgraph"], entry["op_index"])
    found = _kernel_of(view, layer.id) if layer is not None else None
    kernel = entry.get("hidden_in") or (found[0] if found else None)
    if kernel is None:
        return entry.get("note") or None
    with_ = ""
    if found and found[1]:
        names = [f"{unit(data)} {view.bundle.layers[i].op_index} {view.bundle.layers[i].opcode}" for i in found[1][:3]]
        with_ = f" with {', '.join(names)}{' and more' if len(found[1]) > 3 else ''}"
    head = (
        f"Not observed: computed inside the fused kernel {kernel}{with_}, and the fused build "
        "sees only a kernel's final output."
    )
    if data.get("mode") == "unfused":
        return f"{head} {entry.get('note') or 'Not observed in the unfused build either.'}"
    return f"{head} Compile with --numerics-unfused to observe this {unit(data)} on its own."


def _is_first(data: NumericsDocument, entry: NumericsLayer) -> bool:
    first = data.get("first_divergence")
    return first is not None and (first["subgraph"], first["op_index"]) == (entry["subgraph"], entry["op_index"])


def numerics_lines(view: BundleView, origins: list[Origin], in_model: bool) -> list[str]:
    """Markdown lines with the error of each layer whose output is at the hovered text
    (every layer hovered in the model document), or nothing if the bundle has no numerics."""
    data = view.bundle.numerics
    if not data:
        return []
    lines = []
    for origin in origins:
        if not (in_model or origin.is_output):
            continue
        entry = layer_entry(data, origin.layer.subgraph, origin.layer.op_index)
        if entry is None:
            continue
        first = " — **first divergence**" if _is_first(data, entry) else ""
        mode = f", {md.text(entry['observed_by'])} build" if entry.get("observed_by") else ""
        lines.append(
            f"- Numerics of {unit(data)} {entry['op_index']} vs {md.text(data['reference'])}{mode}: "
            f"{format_error(entry, md.text)}{first}"
        )
    if lines:
        lines.insert(0, "\n**Numerics**")
    return lines


def numerics_rows(view: BundleView) -> list[NumericsRow]:
    """Every layer of ``numerics.json`` in graph order, with its model-document place."""
    data = view.bundle.numerics
    if not data:
        return []
    rows = []
    for entry in data["layers"]:
        layer = view.bundle.layer(entry["subgraph"], entry["op_index"])
        places = view.layer_map.model_places.get(layer.id, []) if layer else []
        rows.append(
            NumericsRow(entry, _is_first(data, entry), places[0] if places else None, hidden_hint(view, data, entry))
        )
    return rows


def divergence_warnings(view: BundleView) -> list[tuple[Place, str]]:
    """``(place in the model document, message)`` for every divergent layer, the place cut
    to the first line of the layer's entry."""
    data = view.bundle.numerics
    if not data:
        return []
    out = []
    for row in numerics_rows(view):
        if not (row.entry["observed"] and row.entry["diverges"]) or row.place is None:
            continue
        text = view.bundle.text(row.place.path)
        newline = text.find("\n", row.place.start, row.place.end)
        end = newline if newline > row.place.start else row.place.end
        place = Place(row.place.path, row.place.start, end, row.place.kind, row.place.key)
        e = row.entry
        first = " (first divergence)" if row.first else ""
        out.append(
            (
                place,
                f"{unit(data)} {e['op_index']} {e['opcode']} {e['name']} differs from the "
                f"{data['reference']}{first}: {format_error(e)}",
            )
        )
    return out


def bisect_lines(view: BundleView, path: str, origins: list[Origin]) -> list[str]:
    """In the culprit pass's diff documents of a bisected bundle: each hovered layer's error
    against the baseline before and after that pass."""
    data = view.bundle.bisect
    c = data.get("culprit") if data else None
    if not data or not c or path not in culprit_documents(data):
        return []
    lines = []
    for origin in origins:
        row = layer_change(data, origin.layer.subgraph, origin.layer.op_index)
        if row is None:
            continue
        fmt = lambda v: "not observed" if v is None else f"{v:.3g}"  # noqa: E731
        lines.append(
            f"- op {row['op_index']} {md.text(origin.layer.opcode)}: max abs error "
            f"{fmt(row['before'])} before → {fmt(row['after'])} after"
        )
    if lines:
        lines.insert(
            0,
            f"\n**Bisect**: culprit {md.text(c['stage'])} pass {md.text(c.get('index'))} "
            f"{md.code(c['name'])} (against {md.text(data.get('baseline') or 'the baseline')})",
        )
    return lines

"""Where a layer ended up, per stage and pass: the map behind references, the code lens and
``tvmExplorer/layerPlaces``."""

from __future__ import annotations

import re
import threading
import weakref
from dataclasses import dataclass

from tvm_explorer.bundle.types import Document, Layer
from tvm_explorer.navigation.kernels import (
    KernelPart,
    ffi_wrappers,
    function_of,
    kernel_parts,
    output_functions,
    part_note,
    place_unit,
)
from tvm_explorer.navigation.passes import normalized
from tvm_explorer.navigation.provenance import layers_at
from tvm_explorer.navigation.stages import main_first
from tvm_explorer.navigation.view import BundleView, Keep, Place, keep_all


@dataclass(frozen=True)
class StagePlace:
    """One place of a layer in one document, with where that document sits in the pipeline."""

    place: Place
    stage: str
    pass_index: int | None
    pass_name: str | None
    last_of_stage: bool
    changed: bool
    role: str = "compute"
    """"compute": a statement computing the layer (a Relax binding computing its output, a
    TIR or generated-code statement, the model entry); "bookkeeping": a Relax binding around
    it (buffer allocation, shape checks, kills); "embedded": TIR printed inside a Relax
    module (the TIR documents show it)."""
    function: str = ""
    """The function, PrimFunc or kernel the place is in (places are grouped by it)."""
    note: str = ""
    """For a place in a function that computes none of the layers' outputs (an int8 layer's
    input dequantize in the previous layer's kernel): what it is (``kernels.part_note``)."""


def layers_of(view: BundleView, path: str, offset: int, keep: Keep = keep_all) -> list[Layer]:
    """The layer(s) of a position: a model entry's layer, a tensor's producer, or the origins
    of any indexed position (main operators first)."""
    ids = [o.layer.id for o in layers_at(view, path, offset, keep)]
    return [view.bundle.layers[i] for i in main_first(view, ids)]


_CACHES: weakref.WeakKeyDictionary[BundleView, dict] = weakref.WeakKeyDictionary()
_LOCK = threading.Lock()


def _cache(view: BundleView) -> dict:
    with _LOCK:
        return _CACHES.setdefault(view, {"passes": None, "maps": {}})


def producing_pass(view: BundleView, doc: Document) -> tuple[int | None, str | None]:
    """``(index, name)`` of the pass whose output ``doc`` is (the manifest's changed pass
    whose ``after`` it is), or ``(None, None)`` (the model document)."""
    cache = _cache(view)
    if cache["passes"] is None:
        found: dict[str, tuple[int | None, str | None]] = {}
        for entry in view.bundle.manifest.get("passes", ()) or ():
            if isinstance(entry, dict) and entry.get("changed") and isinstance(entry.get("after"), str):
                try:
                    found[entry["after"]] = (int(entry["index"]), str(entry.get("name")))
                except (KeyError, TypeError, ValueError):
                    continue
        cache["passes"] = found
    return cache["passes"].get(doc.path, (None, None))


def _previous_of_stage(view: BundleView, doc: Document) -> Document | None:
    for prev in reversed(view.bundle.documents[: doc.order]):
        if prev.stage == doc.stage and doc.stage != "code":
            return prev
        if prev.stage != doc.stage:
            return None
    return None


def _last_of_stage(view: BundleView) -> set[str]:
    last: dict[str, str] = {}
    out = set()
    for doc in view.bundle.documents:
        if doc.stage == "code":
            out.add(doc.path)
        else:
            last[doc.stage] = doc.path
    return out | set(last.values())


def layer_places(view: BundleView, layer_ids: list[int], changes: bool = True) -> list[StagePlace]:
    """Every place of the layers in every document, in pipeline order (model, Relax passes,
    TIR passes, generated code), then by position. ``changes``: compare each place with the
    same key in the stage's previous document (False: every place counts as changed)."""
    bundle = view.bundle
    lids = tuple(sorted(set(layer_ids)))
    last = _last_of_stage(view)
    out = [StagePlace(p, "model", None, None, True, False) for p in _model_entries(view, lids)]
    per_doc: dict[str, list[Place]] = {}
    everywhere = view.layer_map.places_of(lids)
    wrappers = ffi_wrappers(view, everywhere)
    for p in everywhere:
        if p not in wrappers:
            per_doc.setdefault(p.path, []).append(p)
    for doc in bundle.documents:
        found = per_doc.get(doc.path)
        if not found:
            continue
        notes = part_notes(view, doc.path, lids) if doc.stage != "model" else {}
        index, name = producing_pass(view, doc)
        prev = _previous_of_stage(view, doc)
        there = bundle.index(prev.path) if prev is not None else None
        for p in found:
            changed = True
            if changes and prev is not None and there is not None:
                same = there.by_key(p.key)
                text = normalized(view, p.path, p.start, p.end)
                changed = not any(normalized(view, prev.path, r.start, r.end) == text for r in same)
            out.append(
                StagePlace(
                    p,
                    doc.stage,
                    index,
                    name,
                    doc.path in last,
                    changed,
                    _role(view, lids, doc.stage, p),
                    function_of(view, p),
                    notes.get(place_unit(view, p), "") if notes else "",
                )
            )
    return out


MAX_NOTED_LAYERS = 64
"""Most layers whose partial functions are noted at once: a position naming more (a whole-model
function) is about no layer in particular."""


def part_notes(view: BundleView, path: str, layer_ids) -> dict[str, str]:
    """Per function of ``path`` holding only a part of the layers (``kernels.kernel_parts``):
    what it is, as Layer Places and the stages side by side say it."""
    if len(set(layer_ids)) > MAX_NOTED_LAYERS:
        return {}
    parts = kernel_parts(view, path, layer_ids)
    if not parts:
        return {}
    homes = sorted(output_functions(view, path, layer_ids))
    return {unit: part_note(view, part, homes[0] if homes else "") for unit, part in parts.items()}


# What a Relax binding calls when it only serves the computation: memory planning and kills
# (R.memory.*, R.vm.alloc_*/kill_*, R.builtin.alloc_tensor), the VM's shape heap and checks
# (R.null_value(), R.call_packed("vm.builtin.match_shape" / "check_tensor_info" / ...)), and
# aliases of their results.
_BOOKKEEPING = re.compile(
    r"(?:R\.memory\.\w+|R\.vm\.(?:alloc|kill)_\w+|R\.builtin\.alloc_tensor|R\.null_value"
    r'|R\.call_packed\(\s*"vm\.builtin\.|[\w.]+$)'
)  # the last: an alias (lv1 = alloc2)
_BINDING_VALUE = re.compile(r"^(?:[\w.]+(?::.*?)? = )?")


def _role(view: BundleView, layer_ids, stage: str, place: Place) -> str:
    """See ``StagePlace.role``. In the last Relax document, as in the reference map, only the
    bindings computing a layer's output count; before it, every binding of the layer that is
    not bookkeeping (an unfused conv's conv2d, add and relu)."""
    if stage != "relax":
        return "compute"
    if place.kind != "binding":
        return "embedded"
    text = view.bundle.text(place.path)[place.start : place.end]
    return "bookkeeping" if binding_is_bookkeeping(text) else "compute"


def binding_is_bookkeeping(text: str) -> bool:
    """Whether a Relax binding's text only serves a computation (allocation, shape checks,
    kills, an alias of their results), as ``StagePlace.role`` counts it."""
    binding = _BINDING_VALUE.match(text)
    assert binding is not None  # every part of the pattern is optional
    return _BOOKKEEPING.match(text[binding.end() :]) is not None


def _model_entries(view: BundleView, lids) -> list[Place]:
    out: list[Place] = []
    for lid in lids:
        out.extend(view.layer_map.model_places.get(lid, ()))
    return out


def reference_map(view: BundleView, layer_ids: list[int]) -> list[Place]:
    """The layers' places in the model, the last Relax document, the last TIR document and the
    generated code, in that order, each once. In the Relax document only the bindings that
    compute a layer's output count (not its buffer allocations, nor the TIR printed inside the
    module: the TIR document shows that)."""
    key = tuple(sorted(set(layer_ids)))
    maps = _cache(view)["maps"]
    if key in maps:
        return list(maps[key])
    seen: set[Place] = set()
    out = []
    stage = {doc.path: doc.stage for doc in view.bundle.documents}
    # Only the last documents of each stage: not every place in every pass (layer_places).
    found = view.layer_map.places_in(key, _last_of_stage(view))
    wrappers = ffi_wrappers(view, found)
    for place in _model_entries(view, key) + found:
        if place in seen or place in wrappers or _role(view, key, stage[place.path], place) != "compute":
            continue
        seen.add(place)
        out.append(place)
    if len(maps) >= 1024:
        maps.clear()
    maps[key] = out
    return list(out)


def place_groups(view: BundleView, places: list[Place]) -> list[tuple[str, str, list[Place]]]:
    """Places grouped by document and the function holding them, in order of first place:
    ``(path, function, places)``. The many stores of one kernel (an unrolled CUDA kernel
    has a hundred) are one group, as the Layer Places view shows them."""
    groups: dict[tuple[str, str], list[Place]] = {}
    for p in places:
        groups.setdefault((p.path, function_of(view, p)), []).append(p)
    return [(path, fn, found) for (path, fn), found in groups.items()]


def lens_summary(view: BundleView, layer_id: int) -> str:
    """Code lens text such as "1 function in generated code · 2 in IR" (``places_summary``)."""
    return places_summary(view, [layer_id])


def places_summary(view: BundleView, layer_ids: list[int]) -> str:
    """ "1 function in generated code · 2 in IR": the places of the reference map grouped by
    document and function (``place_groups``), as the lens and the Layer Places view say it."""
    groups = place_groups(view, [p for p in reference_map(view, layer_ids) if not _is_model(view, p.path)])
    if not groups:
        return "no places in later stages"
    code = sum(1 for path, _, _ in groups if _stage(view, path) == "code")
    text = f"{code} function{'s' if code != 1 else ''} in generated code · {len(groups) - code} in IR"
    # Functions of the generated code that hold only a part of the layers (an int8 layer's
    # input dequantize in the previous layer's kernel), said apart: they are not its kernel.
    in_code = [(path, fn) for path, fn, _ in groups if _stage(view, path) == "code"]
    parts: list[KernelPart] = []
    for path in sorted({path for path, _ in in_code}):
        found = kernel_parts(view, path, layer_ids)
        parts.extend(found[fn] for where, fn in in_code if where == path and fn in found)
    if parts:
        whats = sorted({p.what for p in parts})
        text += f" · {len(parts)} only {'/'.join(whats) if len(whats) <= 2 else 'a part'}"
    return text


def _stage(view: BundleView, path: str) -> str:
    doc = view.bundle.document(path)
    return doc.stage if doc else ""


def _is_model(view: BundleView, path: str) -> bool:
    return _stage(view, path) == "model"


def layers_at_position(view: BundleView, path: str, offset: int, keep: Keep = keep_all) -> list[int]:
    """Layer ids of a position (see ``layers_of``)."""
    return [lay.id for lay in layers_of(view, path, offset, keep)]

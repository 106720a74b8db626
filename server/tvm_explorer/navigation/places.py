"""Where a layer ended up, per stage and pass: the map behind references, the code lens and
``tvmExplorer/layerPlaces``."""

from __future__ import annotations

import threading
import weakref
from dataclasses import dataclass

from ..bundle.reader import Document, Layer
from .passes import normalized
from .provenance import layers_at
from .stages import main_first
from .view import BundleView, Keep, Place, keep_all


@dataclass(frozen=True)
class StagePlace:
    """One place of a layer in one document, with where that document sits in the pipeline."""

    place: Place
    stage: str
    pass_index: int | None
    pass_name: str | None
    last_of_stage: bool
    changed: bool


def layers_of(view: BundleView, path: str, offset: int, keep: Keep = keep_all) -> list[Layer]:
    """The layer(s) of a position: a model entry's layer, a tensor's producer, or the origins
    of any indexed position (main operators first)."""
    ids = [o.layer.id for o in layers_at(view, path, offset, keep)]
    return [view.bundle.layers[i] for i in main_first(view, ids)]


_CACHES: weakref.WeakKeyDictionary[BundleView, dict] = weakref.WeakKeyDictionary()
_LOCK = threading.Lock()


def _cache(view: BundleView) -> dict:
    with _LOCK:
        return _CACHES.setdefault(view, {"passes": None, "maps": {}, "outputs": {}})


def _producing_pass(view: BundleView, doc: Document) -> tuple[int | None, str | None]:
    cache = _cache(view)
    if cache["passes"] is None:
        found: dict[str, tuple[int | None, str | None]] = {}
        for entry in view.bundle.manifest.get("passes", ()) or ():
            if isinstance(entry, dict) and entry.get("changed") and isinstance(entry.get("after"), str):
                try:
                    found[entry["after"]] = (int(entry.get("index")), str(entry.get("name")))
                except (TypeError, ValueError):
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
    for p in view.layer_map.places_of(lids):
        per_doc.setdefault(p.path, []).append(p)
    for doc in bundle.documents:
        found = per_doc.get(doc.path)
        if not found:
            continue
        index, name = _producing_pass(view, doc)
        prev = _previous_of_stage(view, doc)
        there = bundle.index(prev.path) if prev is not None else None
        for p in found:
            changed = True
            if changes and there is not None:
                same = there.by_key(p.key)
                text = normalized(view, p.path, p.start, p.end)
                changed = not any(normalized(view, prev.path, r.start, r.end) == text for r in same)
            out.append(StagePlace(p, doc.stage, index, name, doc.path in last, changed))
    return out


def _model_entries(view: BundleView, lids) -> list[Place]:
    out = []
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
    relax_outputs: dict[str, set[tuple[int, int]]] = {}
    stage = {doc.path: doc.stage for doc in view.bundle.documents}
    # Only the last documents of each stage: not every place in every pass (layer_places).
    for place in _model_entries(view, key) + view.layer_map.places_in(key, _last_of_stage(view)):
        if place in seen:
            continue
        if stage[place.path] == "relax":
            if place.path not in relax_outputs:
                relax_outputs[place.path] = _output_bindings(view, layer_ids, place.path)
            if (place.start, place.end) not in relax_outputs[place.path]:
                continue
        seen.add(place)
        out.append(place)
    if len(maps) >= 1024:
        maps.clear()
    maps[key] = out
    return list(out)


def _output_bindings(view: BundleView, layer_ids: list[int], path: str) -> set[tuple[int, int]]:
    outputs = _cache(view)["outputs"]
    if path not in outputs:
        # layer -> spans of the bindings of this document computing its output
        per_layer: dict[int, set[tuple[int, int]]] = {}
        for rng in view.bundle.index(path).ranges:
            if rng.kind == "binding":
                for lid, out_ in view.bundle.origin_sets[rng.origin_set]:
                    if out_:
                        per_layer.setdefault(lid, set()).add((rng.start, rng.end))
        outputs[path] = per_layer
    found: set[tuple[int, int]] = set()
    for lid in layer_ids:
        found |= outputs[path].get(lid, set())
    return found


def lens_summary(view: BundleView, layer_id: int) -> str:
    """Code lens text such as "4 places in generated code · 9 in IR"."""
    places = [p for p in reference_map(view, [layer_id]) if not _is_model(view, p.path)]
    code = sum(1 for p in places if _stage(view, p.path) == "code")
    ir = len(places) - code
    if not places:
        return "no places in later stages"
    return f"{code} place{'s' if code != 1 else ''} in generated code · {ir} in IR"


def _stage(view: BundleView, path: str) -> str:
    doc = view.bundle.document(path)
    return doc.stage if doc else ""


def _is_model(view: BundleView, path: str) -> bool:
    return _stage(view, path) == "model"


def layers_at_position(view: BundleView, path: str, offset: int, keep: Keep = keep_all) -> list[int]:
    """Layer ids of a position (see ``layers_of``)."""
    return [lay.id for lay in layers_of(view, path, offset, keep)]

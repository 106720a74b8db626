"""Definition, references, origins and per-layer counts: where a layer came from and went."""

from __future__ import annotations

from dataclasses import dataclass

from tvm_explorer.bundle.types import Layer, Origin
from tvm_explorer.navigation.chain import previous_step
from tvm_explorer.navigation.view import BundleView, Keep, Place, PlaceList, keep_all


@dataclass(frozen=True)
class LayerReach:
    """How far one layer travelled: its model entry and every place it ended up."""

    layer: Layer
    entry: Place
    places: PlaceList

    @property
    def documents(self) -> int:
        """Number of distinct documents (stages) holding a place of this layer."""
        return self.places.document_count()

    def summary(self) -> str:
        """Short text such as "12 places in 5 stages"."""
        n, m = len(self.places), self.documents
        if n == 0:
            return "no places in later stages"
        return f"{n} place{'s' if n != 1 else ''} in {m} stage{'s' if m != 1 else ''}"


def _is_model(view: BundleView, path: str) -> bool:
    doc = view.bundle.document(path)
    return doc is not None and doc.stage == "model"


def layers_at(view: BundleView, path: str, offset: int, keep: Keep = keep_all) -> list[Origin]:
    """The origins of the text at ``offset``. In the model document a layer entry stands for
    that layer and a tensor name for the layer producing it."""
    ranges = view.enclosing(path, offset, keep)
    if not ranges:
        return []
    if _is_model(view, path):
        inner = ranges[0]
        if inner.kind == "tensor":
            layer = _tensor_producer(view, inner.key)
            return [Origin(layer, True)] if layer else []
        for rng in ranges:
            layer = view.layer_of_key(rng.key)
            if layer is not None:
                return [Origin(layer, True)]
        return []
    return view.origins_of(ranges)


def _tensor_producer(view: BundleView, key: str) -> Layer | None:
    parts = key.split(":", 2)
    if len(parts) != 3 or parts[0] != "tensor":
        return None
    try:
        return view.bundle.producer(int(parts[1]), parts[2])
    except ValueError:
        return None


def definition(view: BundleView, path: str, offset: int, keep: Keep = keep_all) -> list[Place]:
    """The model entries of the layers the text at ``offset`` came from (one per layer), those
    it produces first.
    On the model document only a tensor name has a definition: the layer producing it."""
    ranges = view.enclosing(path, offset, keep)
    if not ranges:
        return []
    if _is_model(view, path):
        if ranges[0].kind != "tensor":
            return []
        layer = _tensor_producer(view, ranges[0].key)
        return view.layer_places([layer.id]) if layer else []
    # The peek shows no labels: the layers this text produces come first, then those it only
    # computes a part of (a consumer's input dequantize fused into this kernel).
    origins = view.origins_of(ranges)
    own = {o.layer.id for o in origins if o.is_output}
    layers = view.layer_places(own) + view.layer_places({o.layer.id for o in origins} - own)
    doc = view.bundle.document(path)
    if doc is not None and doc.source is not None:
        # Machine code: the source line its line information names comes first.
        return previous_step(view, path, offset, keep) + layers
    return layers


def references(
    view: BundleView, path: str, offset: int, include_declaration: bool, keep: Keep = keep_all
) -> list[Place]:
    """Every place sharing the origins of the text at ``offset``, across all documents,
    preceded by the layers' model entries when ``include_declaration``."""
    lids = sorted({o.layer.id for o in layers_at(view, path, offset, keep)})
    later = view.layer_map.places_of(tuple(lids))
    return (view.layer_places(lids) if include_declaration else []) + later


def origins(view: BundleView, path: str, offset: int, keep: Keep = keep_all):
    """``(origin, model entry or None)`` for each origin of the text at ``offset``."""
    out = []
    for origin in layers_at(view, path, offset, keep):
        entries = view.layer_map.model_places.get(origin.layer.id)
        out.append((origin, entries[0] if entries else None))
    return out


def reach(view: BundleView) -> list[LayerReach]:
    """Per layer with a model entry: every place it ended up (for code lenses)."""
    lmap = view.layer_map
    out = []
    for layer in view.bundle.layers:
        for entry in lmap.model_places.get(layer.id, ()):
            out.append(LayerReach(layer, entry, lmap.places(layer.id)))
    return out

"""An immutable, fully loaded bundle plus the lookup tables built from it on first use."""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from ..bundle.format import MODEL_DOCUMENT
from ..bundle.index import Range
from ..bundle.reader import Bundle, Layer, Origin
from ..errors import BundleError
from .positions import LineIndex

PLACES_CACHE_LIMIT = 1_000_000
"""Most places ``LayerMap.places_of`` keeps remembered at once."""

LINE_INDEX_BYTES_KEPT = 16 * 1024**2
"""Most memory the line indexes a view keeps may hold together (the most recently used are
kept, at least one). A document's index keeps its line starts only (``LineIndex`` with a
``source``): about 8 bytes a line, so a whole bundle's fit; one that must keep its text
(characters outside one code unit) counts that text."""

Keep = Callable[[Range], bool]
"""Says whether a range of the queried document may be used (False: an edit touched it)."""


def keep_all(_rng: Range) -> bool:
    """The ``Keep`` of a document nobody edited."""
    return True


@dataclass(frozen=True)
class Place:
    """An indexed piece of a bundle document: what every navigation answer is made of."""

    path: str
    start: int
    end: int
    kind: str
    key: str

    @classmethod
    def of(cls, path: str, rng: Range) -> Place:
        """The place of range ``rng`` in document ``path``."""
        return cls(path, rng.start, rng.end, rng.kind, rng.key)


class LayerMap:
    """Where each layer ended up: built once per bundle, then every question is a lookup."""

    def __init__(self, bundle: Bundle):
        self.layers_of_set = [frozenset(lid for lid, _ in s) for s in bundle.origin_sets]
        self._bundle = bundle
        # layer -> path -> the numbers (in the document's index) of every range whose origin
        # set holds the layer, in document order (ranges are made when asked for: ``ranges``)
        self._ranges: dict[int, dict[str, list[int]]] = {}
        # layer -> innermost places outside the model document, in document order
        self.places: dict[int, list[Place]] = {}
        # layer -> its entry in the model document
        self.model_places: dict[int, list[Place]] = {}
        for doc in bundle.documents:
            self._add_document(bundle, doc.path, doc.stage == "model")
        self._order = {doc.path: doc.order for doc in bundle.documents}
        for places in self.places.values():
            places.sort(key=self._place_key)
        self._places_of: dict[tuple[int, ...], list[Place]] = {}
        self._places_of_size = 0

    def _place_key(self, place: Place) -> tuple[int, int, int]:
        """Document order (the pipeline's), then position, outer places first."""
        return self._order[place.path], place.start, -place.end

    def places_of(self, layer_ids: tuple[int, ...]) -> list[Place]:
        """Every place of any of ``layer_ids`` (sorted), once each, in document order, then
        by position. Remembered per set of layers: a position on a function or a model layer
        asks for the same thousands of places again and again."""
        got = self._places_of.get(layer_ids)
        if got is None:
            got = self._gather(layer_ids, None)
            # Bounded by entries and by the places they hold together (a crafted bundle's
            # every position can name thousands of layers).
            if len(self._places_of) >= 1024 or self._places_of_size + len(got) > PLACES_CACHE_LIMIT:
                self._places_of.clear()
                self._places_of_size = 0
            self._places_of[layer_ids] = got
            self._places_of_size += len(got)
        return list(got)

    def places_in(self, layer_ids: tuple[int, ...], paths: set[str]) -> list[Place]:
        """The places of any of ``layer_ids`` in the documents ``paths`` only, once each, in
        document order, then by position (as ``places_of`` orders them). A layer's own places
        are kept sorted, so one layer's need no sorting and several layers' only theirs in
        these documents (a whole-model position has tens of thousands in all documents)."""
        return self._gather(layer_ids, paths)

    def _gather(self, layer_ids: tuple[int, ...], paths: set[str] | None) -> list[Place]:
        lists = [self.places.get(lid, ()) if paths is None else
                 [p for p in self.places.get(lid, ()) if p.path in paths] for lid in layer_ids]
        if len(lists) == 1:
            return list(lists[0])  # each layer's places are kept sorted
        return sorted({p for got in lists for p in got}, key=self._place_key)

    def ranges(self, layer_id: int, path: str) -> list[Range]:
        """Every range of document ``path`` whose origin set holds the layer, in order."""
        numbers = self._ranges.get(layer_id, {}).get(path)
        if not numbers:
            return []
        ranges = self._bundle.index(path).ranges
        return [ranges[i] for i in numbers]

    def _add_document(self, bundle: Bundle, path: str, is_model: bool) -> None:
        """Add the ranges of one document. Linear in the number of (range, layer) pairs: a
        range is an innermost place of a layer when the next range holding that layer (in
        document order) lies outside its subtree, which is contiguous in document order.
        (Keeping the set of layers below every range instead cost the square of the range
        count: 16k nested ranges with a layer each took 5 GB.) Works on the index's columns:
        making a ``Range`` of each of a large bundle's 100 k ranges took most of the time."""
        index = bundle.index(path)
        parents = index.parents
        n = len(parents)
        sets = index.origin_sets()
        last = list(range(n))  # last[i]: index of the last range inside range i
        for i in range(n - 1, 0, -1):
            parent = parents[i]
            if parent >= 0 and last[i] > last[parent]:
                last[parent] = last[i]
        next_with: dict[int, int] = {}  # layer -> smallest index seen so far (reverse scan)
        touched: list[list[int]] = []
        layers_of_set = self.layers_of_set
        found: list[tuple[int, int]] = []  # (layer, range number): places, in reverse order
        for i in range(n - 1, -1, -1):
            layers = layers_of_set[sets[i]]
            if not layers:
                continue
            for lid in layers:
                per_path = self._ranges.setdefault(lid, {})
                got = per_path.get(path)
                if got is None:
                    got = per_path[path] = []
                    touched.append(got)
                got.append(i)
                if is_model or next_with.get(lid, n) > last[i]:
                    found.append((lid, i))
                next_with[lid] = i
        for got in touched:
            got.reverse()
        fields = index.span_kind_key
        made: dict[int, Place] = {}
        for lid, i in found:
            place = made.get(i)
            if place is None:
                place = made[i] = Place(path, *fields(i))
            if is_model:
                if place.kind == "layer":
                    self.model_places.setdefault(lid, []).append(place)
            else:
                self.places.setdefault(lid, []).append(place)


class BundleView:
    """A loaded bundle as the server sees it. Never mutated after loading, so a request that
    holds one sees one consistent bundle even while a newer one replaces it."""

    def __init__(self, bundle: Bundle, problems: list[BundleError] | None = None):
        self.bundle = bundle
        self.root: Path = bundle.root
        self.problems = list(problems or [])
        self._layer_map: LayerMap | None = None
        self._line_indexes: OrderedDict[tuple[str, str], LineIndex] = OrderedDict()
        self._key_layers: dict[str, dict[str, tuple[bool, frozenset[int]]]] = {}

    @property
    def layer_map(self) -> LayerMap:
        """Layer -> places, computed on first use."""
        if self._layer_map is None:
            self._layer_map = LayerMap(self.bundle)
        return self._layer_map

    def key_layers(self, path: str) -> dict[str, tuple[bool, frozenset[int]]]:
        """Per key of document ``path``: whether a range carrying it has no origin, and the
        union of the layers of its ranges (built once; linear in the index). Answers "does a
        range with this key share a layer with ..." without scanning every such range."""
        got = self._key_layers.get(path)
        if got is None:
            layers = self.layer_map.layers_of_set
            empty: dict[str, bool] = {}
            union: dict[str, set[int]] = {}
            for rng in self.bundle.index(path).ranges:
                own = layers[rng.origin_set]
                empty[rng.key] = empty.get(rng.key, False) or not own
                union.setdefault(rng.key, set()).update(own)
            got = self._key_layers[path] = {k: (empty[k], frozenset(v)) for k, v in union.items()}
        return got

    def line_index(self, path: str, encoding: str) -> LineIndex:
        """Line starts of a document's bundle text (cached)."""
        key = (path, encoding)
        got = self._line_indexes.get(key)
        if got is None:
            bundle = self.bundle
            got = LineIndex(bundle.text(path), encoding, lambda: bundle.text(path))
            # Replace the mapping (never mutate it): requests on worker threads read it.
            kept = OrderedDict(self._line_indexes)
            kept[key] = got
            held = sum(lines.held_bytes() for lines in kept.values())
            while held > LINE_INDEX_BYTES_KEPT and len(kept) > 1:
                held -= kept.popitem(last=False)[1].held_bytes()
            self._line_indexes = kept
        return got

    @property
    def model_path(self) -> str:
        """Path of the model document."""
        for doc in self.bundle.documents:
            if doc.stage == "model":
                return doc.path
        return MODEL_DOCUMENT

    def enclosing(self, path: str, offset: int, keep: Keep = keep_all) -> list[Range]:
        """Usable ranges containing ``offset``, innermost first."""
        return [r for r in self.bundle.index(path).enclosing(offset) if keep(r)]

    def origins_of(self, ranges: list[Range]) -> list[Origin]:
        """Origins of the innermost range (of ``ranges``, innermost first) that has any."""
        for rng in ranges:
            if rng.origin_set:
                return self.bundle.origins(rng.origin_set)
        return []

    def layer_of_key(self, key: str) -> Layer | None:
        """The layer named by a ``layer:<subgraph>:<op_index>`` key, or None."""
        parts = key.split(":")
        if len(parts) != 3 or parts[0] != "layer":
            return None
        try:
            return self.bundle.layer(int(parts[1]), int(parts[2]))
        except ValueError:
            return None

    def layer_places(self, layer_ids) -> list[Place]:
        """The model-document entries of the given layers, in layer order."""
        out = []
        for lid in sorted(set(layer_ids)):
            out.extend(self.layer_map.model_places.get(lid, ()))
        return out

    def document_order(self, path: str) -> int:
        """Position of a document in the provenance chain (-1 if unknown)."""
        doc = self.bundle.document(path)
        return doc.order if doc else -1

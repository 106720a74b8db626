"""An immutable, fully loaded bundle plus the lookup tables built from it on first use."""

from __future__ import annotations

from array import array
from bisect import bisect_left
from collections import OrderedDict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from itertools import chain, compress, groupby, islice
from operator import gt
from pathlib import Path

from tvm_explorer.bundle.format import MODEL_DOCUMENT
from tvm_explorer.bundle.index import Range
from tvm_explorer.bundle.reader import Bundle
from tvm_explorer.bundle.types import Layer, Origin
from tvm_explorer.errors import BundleError
from tvm_explorer.navigation.positions import LineIndex

PLACES_CACHE_LIMIT = 200_000
"""Most places ``LayerMap.places_of`` keeps remembered at once (~150 bytes each; a position
on a function or a model layer asks for a few thousand)."""

LINE_INDEX_BYTES_KEPT = 16 * 1024**2
"""Most memory the line indexes a view keeps may hold together (the most recently used are
kept, at least one). A document's index keeps its line starts only (``LineIndex`` with a
``source``): about 4 bytes a line, so a whole bundle's fit; one that must keep its text
(characters outside one code unit) counts that text."""

Keep = Callable[[Range], bool]
"""Says whether a range of the queried document may be used (False: an edit touched it)."""


def keep_all(_rng: Range) -> bool:
    """The ``Keep`` of a document nobody edited."""
    return True


@dataclass(frozen=True, slots=True)
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


_DOC_SHIFT = 32
_NUMBER = (1 << _DOC_SHIFT) - 1


class PlaceList(Sequence):
    """Places of one layer as a read-only sequence: kept as numbers (a document's place in
    the pipeline and a range's number in its index, one integer each), each ``Place`` made
    when read. A large bundle has hundreds of thousands of places; as objects they took as
    much memory as the rest of the loaded bundle, and making them most of its load time."""

    def __init__(self, layer_map: LayerMap, packed: array):
        self._map, self._packed = layer_map, packed

    def __len__(self) -> int:
        return len(self._packed)

    def __getitem__(self, i):
        if isinstance(i, slice):
            return self._map._make(self._packed[i])
        return self._map._make((self._packed[i],))[0]

    def __iter__(self):
        return iter(self._map._make(self._packed))

    def document_count(self) -> int:
        """Number of distinct documents holding these places."""
        return len(set(map(_DOC_SHIFT.__rrshift__, self._packed)))


class LayerMap:
    """Where each layer ended up: built once per bundle, then every question is a lookup."""

    def __init__(self, bundle: Bundle):
        self.layers_of_set = [frozenset(lid for lid, _ in s) for s in bundle.origin_sets]
        self._bundle = bundle
        self._paths = [doc.path for doc in bundle.documents]
        self._order = {doc.path: doc.order for doc in bundle.documents}
        # layer -> path -> the numbers (in the document's index) of every range whose origin
        # set holds the layer, in document order (ranges are made when asked for: ``ranges``)
        self._ranges: dict[int, dict[str, array]] = {}
        # layer -> its innermost places outside the model document, in document order then
        # by position, each as ``document order << 32 | range number`` (``PlaceList``)
        self._packed: dict[int, array] = {}
        # layer -> its entry in the model document
        self.model_places: dict[int, list[Place]] = {}
        prepared, parts = bundle.take_prepared()
        if not (isinstance(prepared, DocumentParts) and prepared.layers_of_set == self.layers_of_set):
            parts = {}  # made from origin sets the reader did not take as they were
        for doc in bundle.documents:
            if doc.stage == "model":
                self._add_model_document(bundle, doc.path)
            else:
                self._add_document(bundle, doc.path, doc.order, parts.get(doc.path))
        self._places_of: dict[tuple[int, ...], list[Place]] = {}
        self._places_of_size = 0

    def places(self, layer_id: int) -> PlaceList:
        """The innermost places of a layer outside the model document, in document order,
        then by position (outer places first)."""
        return PlaceList(self, self._packed.get(layer_id, _NO_PLACES))

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
        document order, then by position (as ``places_of`` orders them)."""
        return self._gather(layer_ids, paths)

    def _gather(self, layer_ids: tuple[int, ...], paths: set[str] | None) -> list[Place]:
        arrays: list[Sequence[int]] = [got for lid in layer_ids if (got := self._packed.get(lid))]
        if paths is not None:
            spans = [
                (order << _DOC_SHIFT, (order + 1) << _DOC_SHIFT)
                for order in sorted(self._order[p] for p in paths if p in self._order)
            ]
            arrays = [
                list(chain.from_iterable(packed[bisect_left(packed, lo) : bisect_left(packed, hi)] for lo, hi in spans))
                for packed in arrays
            ]
        if not arrays:
            return []
        if len(arrays) == 1:
            return self._make(arrays[0])  # each layer's places are kept in order
        return self._make(sorted(set().union(*arrays)))

    def _make(self, packed: Iterable[int]) -> list[Place]:
        """The places of packed numbers (see ``_packed``)."""
        out: list[Place] = []
        paths, index_of = self._paths, self._bundle.index
        for doc, values in groupby(packed, lambda value: value >> _DOC_SHIFT):
            path = paths[doc]
            fields = index_of(path).span_kind_key
            out.extend(Place(path, *fields(value & _NUMBER)) for value in values)
        return out

    def ranges(self, layer_id: int, path: str) -> list[Range]:
        """Every range of document ``path`` whose origin set holds the layer, in order."""
        numbers = self._ranges.get(layer_id, {}).get(path)
        if not numbers:
            return []
        ranges = self._bundle.index(path).ranges
        return [ranges[i] for i in numbers]

    def _add_document(self, bundle: Bundle, path: str, order: int, part=None) -> None:
        """Add the ranges of one document (``part``: what ``DocumentParts`` made of its index
        while the bundle loaded, if anything)."""
        index = bundle.index(path)
        if not len(index):
            return  # empty, or damaged (``preload`` found it after its part was made)
        if part is None:
            part = DocumentParts(self.layers_of_set)(index)
        base = order << _DOC_SHIFT
        for lid, numbers, innermost in part:
            self._ranges.setdefault(lid, {})[path] = numbers
            packed = self._packed.get(lid)
            if packed is None:
                packed = self._packed[lid] = array("q")
            packed.extend(map(base.__add__, innermost))

    def _add_model_document(self, bundle: Bundle, path: str) -> None:
        """The model document: each layer's ranges, and its entries (ranges of kind
        "layer", last first)."""
        index = bundle.index(path)
        layers_of_set = self.layers_of_set
        sets = index.origin_sets()
        fields = index.span_kind_key
        for i in range(len(index) - 1, -1, -1):
            layers = layers_of_set[sets[i]]
            if not layers:
                continue
            for lid in layers:
                self._ranges.setdefault(lid, {}).setdefault(path, array("l")).append(i)
            start, end, kind, key = fields(i)
            if kind == "layer":
                place = Place(path, start, end, kind, key)
                for lid in layers:
                    self.model_places.setdefault(lid, []).append(place)
        for per_path in self._ranges.values():
            if path in per_path:
                per_path[path].reverse()


_NO_PLACES = array("q")


class DocumentParts:
    """What a ``LayerMap`` needs of one document's index, made from that index alone: for
    each layer, the numbers of the ranges whose origin set holds it, and of its innermost
    places. A range is an innermost place of a layer when the next range holding that layer
    (in document order) lies outside its subtree, which is contiguous in document order.
    (Keeping the set of layers below every range instead cost the square of the range
    count: 16k nested ranges with a layer each took 5 GB.) Works per origin set on the
    index's columns, in loops that run in C: a loop per range and layer took most of a large
    bundle's load.

    ``Bundle(root, prepare=DocumentParts.prepare)`` makes these while ``index.json`` is
    parsed (beside the parsing worker), and the ``LayerMap`` only gathers them."""

    def __init__(self, layers_of_set: list[frozenset[int]]):
        self.layers_of_set = layers_of_set

    @classmethod
    def prepare(cls, origin_sets) -> DocumentParts | None:
        """For raw ``origin_sets`` of ``index.json`` (a ``Prepare`` for the reader); None
        unless they are well formed (the reader then reports them)."""
        if not isinstance(origin_sets, list):
            return None
        layers_of_set = [frozenset(lid for lid, _ in members) for members in origin_sets]
        if not all(type(lid) is int for layers in layers_of_set for lid in layers):
            return None
        return cls(layers_of_set)

    def __call__(self, index) -> list[tuple[int, array, array]]:
        """``(layer, range numbers, innermost range numbers)`` for each layer in ``index``."""
        n = len(index)
        if not n:
            return []
        last = _subtree_ends(index.parents)
        per_layer: dict[int, list[array]] = {}
        layers_of_set = self.layers_of_set
        for origin_set, numbers in index.numbers_by_origin_set():
            for lid in layers_of_set[origin_set]:
                per_layer.setdefault(lid, []).append(numbers)
        out = []
        for lid, parts in per_layer.items():
            numbers = parts[0] if len(parts) == 1 else array("l", sorted(chain.from_iterable(parts)))
            following = chain(islice(numbers, 1, None), (n,))  # the next range holding lid
            innermost = compress(numbers, map(gt, following, map(last.__getitem__, numbers)))
            out.append((lid, numbers, array("l", innermost)))
        return out


def _subtree_ends(parents: array) -> list[int]:
    """``ends[i]``: the number of the last range inside range ``i`` (``i`` itself if none)."""
    ends = list(range(len(parents)))
    for i in range(len(parents) - 1, 0, -1):
        parent = parents[i]
        if parent >= 0 and ends[i] > ends[parent]:
            ends[parent] = ends[i]
    return ends


class BundleView:
    """A loaded bundle as the server sees it. Never mutated after loading, so a request that
    holds one sees one consistent bundle even while a newer one replaces it."""

    def __init__(self, bundle: Bundle, problems: list[BundleError] | None = None):
        self.bundle = bundle
        self.root: Path = bundle.root
        self.problems = list(problems or [])
        # The directory's signature when this version was read (set by registry.load): what
        # the watcher compares with, so a bundle swapped during the read is seen as changed.
        self.signature: tuple | None = None
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
        out: list[Place] = []
        for lid in sorted(set(layer_ids)):
            out.extend(self.layer_map.model_places.get(lid, ()))
        return out

    def document_order(self, path: str) -> int:
        """Position of a document in the provenance chain (-1 if unknown)."""
        doc = self.bundle.document(path)
        return doc.order if doc else -1

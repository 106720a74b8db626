"""Per-document provenance index: sorted, nested ranges answered by lookup.

Like MLIR's mlir-lsp-server, every question is "which range contains this offset?".
Ranges are character offsets (code points); converting to editor positions is the caller's job.

A loaded index is held as a few flat arrays (offsets, origin sets, kinds, and numbers into a
string table the documents of a bundle share), not as a Python object per range: a bundle has
hundreds of thousands of ranges, and an object per range made the server hold several times the
bundle's size. ``Range`` tuples are made when asked for.
"""

from __future__ import annotations

from array import array
from bisect import bisect_left, bisect_right
from collections.abc import Sequence
from itertools import repeat
from operator import gt, neg
from typing import NamedTuple

from tvm_explorer.bundle.format import KINDS

KIND_CODES = {k: i for i, k in enumerate(KINDS)}
"""The number of each range kind (what ``DocumentIndex`` stores per range)."""


class Range(NamedTuple):
    """One indexed piece of a document (a named tuple, made on demand from the arrays)."""

    start: int
    end: int
    origin_set: int
    kind: str
    key: str
    link: str | None = None

    def to_json(self) -> list:
        """The index entry ``[start, end, set, kind, key(, link)]``."""
        return list(self) if self.link else list(self[:5])


class Strings:
    """Keys and links of a bundle's documents, each stored once (numbered)."""

    _empty_index: DocumentIndex  # set by ``empty_index`` when first asked for

    def __init__(self):
        self.items: list[str] = []
        self.ids: dict[str, int] = {}

    def id(self, s: str) -> int:
        """The number of ``s`` (added when new)."""
        got = self.ids.get(s)
        if got is None:
            got = self.ids[s] = len(self.items)
            self.items.append(s)
        return got

    def add_all(self, values) -> None:
        """Number every string of ``values`` not numbered yet (None values are skipped), in
        order of first appearance, as ``id`` one by one would: a loop in C over a
        document's 100 k keys, in Python only over the new ones."""
        ids, items = self.ids, self.items
        new = [s for s in dict.fromkeys(values) if s not in ids and s is not None]
        ids.update(zip(new, range(len(items), len(items) + len(new))))
        items.extend(new)


def empty_index(strings: Strings) -> DocumentIndex:
    """The index of a document without ranges, one for all such documents of a bundle (it is
    never changed once made): a bundle of 100,000 documents made one each, a second of its load."""
    got = getattr(strings, "_empty_index", None)
    if got is None:
        got = strings._empty_index = DocumentIndex(None, strings)
    return got


class Ranges(Sequence):
    """The ranges of a document as a read-only sequence of ``Range`` (made when read)."""

    def __init__(self, index: DocumentIndex):
        self._index = index

    def __len__(self) -> int:
        return len(self._index._starts)

    def __getitem__(self, i):
        if isinstance(i, slice):
            return [self._index._range(j) for j in range(*i.indices(len(self)))]
        if i < 0:
            i += len(self)
        if not 0 <= i < len(self):
            raise IndexError(i)
        return self._index._range(i)

    def __iter__(self):
        make = self._index._range
        return (make(i) for i in range(len(self)))

    def __eq__(self, other) -> bool:
        return list(self) == list(other) if isinstance(other, (list, tuple, Ranges)) else NotImplemented

    # Equal by content, as a list is: unhashable as a list (typeshed types ``__hash__`` as a method).
    __hash__ = None  # type: ignore[assignment]


class DocumentIndex:
    """The ranges of one document, sorted by start and nested outer-before-inner."""

    def __init__(self, ranges: list[Range] | None = None, strings: Strings | None = None):
        self._strings = strings if strings is not None else Strings()
        self._starts = array("q")
        self._ends = array("q")
        self._sets = array("l")
        self._kinds = bytearray()
        self._keys = array("l")
        self._links = array("l")  # -1: no link
        for rng in sorted(ranges or (), key=lambda r: (r.start, -r.end)):
            self.append(rng.start, rng.end, rng.origin_set, KIND_CODES[rng.kind], rng.key, rng.link)
        self.finish()

    def append(self, start: int, end: int, origin_set: int, kind: int, key: str, link: str | None) -> None:
        """Add a range (``kind`` is its number in ``KINDS``); ``finish`` once all are added,
        in (start, -end) order."""
        self._starts.append(start)
        self._ends.append(end)
        self._sets.append(origin_set)
        self._kinds.append(kind)
        self._keys.append(self._strings.id(key))
        self._links.append(-1 if link is None else self._strings.id(link))

    def extend(self, starts, ends, origin_sets, kinds, keys, links) -> None:
        """Add many ranges at once, column by column (``links``: a string or None each), as
        ``append`` would one by one; values are not checked here."""
        strings = self._strings
        self._starts.extend(starts)
        self._ends.extend(ends)
        self._sets.extend(origin_sets)
        self._kinds.extend(kinds)
        strings.add_all(keys)
        strings.add_all(links)
        ids = strings.ids
        self._keys.extend(map(ids.__getitem__, keys))
        self._links.extend(map(ids.get, links, repeat(-1)))  # None: -1

    def finish(self, sorted_already: bool = False) -> DocumentIndex:
        """Sort (if the ranges came unsorted; ``sorted_already``: the arrays are those of an
        index finished before); the nesting is computed when first asked for."""
        n = len(self._starts)
        starts, ends = self._starts, self._ends
        order_keys = [] if sorted_already or n < 2 else list(zip(starts, map(neg, ends)))
        if any(map(gt, order_keys, order_keys[1:])):
            order = sorted(range(n), key=order_keys.__getitem__)
            for name in ("_starts", "_ends", "_sets", "_keys", "_links"):
                old = getattr(self, name)
                setattr(self, name, array(old.typecode, (old[i] for i in order)))
            self._kinds = bytearray(self._kinds[i] for i in order)
        self._parent: array | None = None
        self._lookup: dict[str, tuple[array, array]] = {}
        return self

    def _parents(self) -> array:
        parents = array("l")
        stack: list[int] = []
        starts, ends = self._starts, self._ends
        for i in range(len(starts)):
            start = starts[i]
            while stack and ends[stack[-1]] <= start:
                stack.pop()
            parents.append(stack[-1] if stack else -1)
            stack.append(i)
        return parents

    def _range(self, i: int) -> Range:
        link = self._links[i]
        items = self._strings.items
        return Range(
            self._starts[i],
            self._ends[i],
            self._sets[i],
            KINDS[self._kinds[i]],
            items[self._keys[i]],
            None if link < 0 else items[link],
        )

    def span_kind_key(self, i: int) -> tuple[int, int, str, str]:
        """``(start, end, kind, key)`` of range ``i`` (without making the ``Range``)."""
        return self._starts[i], self._ends[i], KINDS[self._kinds[i]], self._strings.items[self._keys[i]]

    @property
    def ranges(self) -> Ranges:
        """All ranges in order (a sequence; each ``Range`` is made when read)."""
        return Ranges(self)

    def at(self, offset: int) -> Range | None:
        """The innermost range containing ``offset``, or None."""
        i = bisect_right(self._starts, offset) - 1
        parents = self.parents
        while i >= 0 and self._ends[i] <= offset:
            i = parents[i]
        return self._range(i) if i >= 0 else None

    def outermost(self) -> list[Range]:
        """The ranges no other range contains, in order (a Relax or TIR document's functions):
        each found by skipping the previous one's inner ranges, not by reading them all."""
        out = []
        starts, ends = self._starts, self._ends
        i, n = 0, len(starts)
        while i < n:
            out.append(self._range(i))
            i = bisect_left(starts, ends[i], i + 1)
        return out

    def enclosing(self, offset: int) -> list[Range]:
        """All ranges containing ``offset``, innermost first."""
        out = []
        i = bisect_right(self._starts, offset) - 1
        parents = self.parents
        while i >= 0:
            if self._ends[i] > offset:
                out.append(self._range(i))
            i = parents[i]
        return out

    def _sorted(self, column: str) -> tuple[array, array]:
        """A sorted copy of ``column`` (``_keys``, ``_links``, ``_sets``) and the permutation
        (range numbers, ascending among equal values), built on first use."""
        got = self._lookup.get(column)
        if got is None:
            values = getattr(self, column)
            order = array("l", sorted(range(len(values)), key=values.__getitem__))
            got = self._lookup[column] = (array("l", map(values.__getitem__, order)), order)
        return got

    def _find(self, column: str, value: int) -> list[Range]:
        """Ranges whose ``column`` is ``value``, in document order."""
        values, order = self._sorted(column)
        lo = bisect_left(values, value)
        hi = bisect_right(values, value, lo)
        return [self._range(order[i]) for i in range(lo, hi)]

    def numbers_by_origin_set(self) -> list[tuple[int, array]]:
        """``(origin set, numbers of its ranges, ascending)`` for each origin set present."""
        values, order = self._sorted("_sets")
        out, lo, n = [], 0, len(values)
        while lo < n:
            hi = bisect_right(values, values[lo], lo)
            out.append((values[lo], order[lo:hi]))
            lo = hi
        return out

    def by_key(self, key: str) -> list[Range]:
        """Every range carrying ``key`` (usually one)."""
        kid = self._strings.ids.get(key)
        return [] if kid is None else self._find("_keys", kid)

    def by_link(self, link: str) -> list[Range]:
        """Every range carrying ``link`` as its sixth element (e.g. bindings calling a PrimFunc)."""
        lid = self._strings.ids.get(link)
        return [] if lid is None else self._find("_links", lid)

    def by_origin_set(self, origin_set: int) -> list[Range]:
        """Every range whose origin set is ``origin_set``, in document order."""
        return self._find("_sets", origin_set)

    @property
    def parents(self) -> array:
        """``parents[i]``: the index of range ``i``'s innermost enclosing range, or -1
        (computed on first use: a load converts every index, a request needs a few)."""
        if self._parent is None:
            self._parent = self._parents()
        return self._parent

    def origin_sets(self) -> array:
        """``origin_sets()[i]`` is the origin set of ``ranges[i]`` (without making ranges)."""
        return self._sets

    def keys(self):
        """All keys present in this document."""
        items = self._strings.items
        return {items[k]: None for k in self._keys}.keys()

    def __len__(self) -> int:
        return len(self._starts)

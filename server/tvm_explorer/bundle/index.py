"""Per-document provenance index: sorted, nested ranges answered by lookup.

Like MLIR's mlir-lsp-server, every question is "which range contains this offset?".
Ranges are character offsets (code points); converting to editor positions is the caller's job.
"""

from __future__ import annotations

from bisect import bisect_right
from typing import NamedTuple


class Range(NamedTuple):
    """One indexed piece of a document (a named tuple: documents hold hundreds of thousands,
    made at capture time and again at every load)."""

    start: int
    end: int
    origin_set: int
    kind: str
    key: str
    link: str | None = None

    def to_json(self) -> list:
        """The index entry ``[start, end, set, kind, key(, link)]``."""
        return list(self) if self.link else list(self[:5])


class DocumentIndex:
    """The ranges of one document, sorted by start and nested outer-before-inner."""

    def __init__(self, ranges: list[Range]):
        self.ranges = sorted(ranges, key=lambda r: (r.start, -r.end))
        self._starts = [r.start for r in self.ranges]
        self._parent = self._parents(self.ranges)
        self._by_key: dict[str, list[int]] = {}
        self._by_link: dict[str, list[int]] = {}
        self._by_set: dict[int, list[int]] = {}
        for i, rng in enumerate(self.ranges):
            self._by_key.setdefault(rng.key, []).append(i)
            self._by_set.setdefault(rng.origin_set, []).append(i)
            if rng.link:
                self._by_link.setdefault(rng.link, []).append(i)

    @staticmethod
    def _parents(ranges: list[Range]) -> list[int]:
        parents = []
        stack: list[int] = []
        for i, rng in enumerate(ranges):
            while stack and ranges[stack[-1]].end <= rng.start:
                stack.pop()
            parents.append(stack[-1] if stack else -1)
            stack.append(i)
        return parents

    def at(self, offset: int) -> Range | None:
        """The innermost range containing ``offset``, or None."""
        i = bisect_right(self._starts, offset) - 1
        while i >= 0 and self.ranges[i].end <= offset:
            i = self._parent[i]
        return self.ranges[i] if i >= 0 else None

    def enclosing(self, offset: int) -> list[Range]:
        """All ranges containing ``offset``, innermost first."""
        out = []
        i = bisect_right(self._starts, offset) - 1
        while i >= 0:
            if self.ranges[i].end > offset:
                out.append(self.ranges[i])
            i = self._parent[i]
        return out

    def by_key(self, key: str) -> list[Range]:
        """Every range carrying ``key`` (usually one)."""
        return [self.ranges[i] for i in self._by_key.get(key, ())]

    def by_link(self, link: str) -> list[Range]:
        """Every range carrying ``link`` as its sixth element (e.g. bindings calling a PrimFunc)."""
        return [self.ranges[i] for i in self._by_link.get(link, ())]

    def by_origin_set(self, origin_set: int) -> list[Range]:
        """Every range whose origin set is ``origin_set``, in document order."""
        return [self.ranges[i] for i in self._by_set.get(origin_set, ())]

    @property
    def parents(self) -> list[int]:
        """``parents[i]`` is the index in ``ranges`` of the range directly enclosing
        ``ranges[i]`` (-1 for top-level ranges)."""
        return self._parent

    def keys(self):
        """All keys present in this document."""
        return self._by_key.keys()

    def __len__(self) -> int:
        return len(self.ranges)

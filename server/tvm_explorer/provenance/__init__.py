"""Origin sets: which layers a piece of IR or code came from.

An origin is ``(layer_id, is_output)``; an origin set is interned once and referred to by its
id everywhere (spans stamped into TVM IR, the bundle index). Id 0 is the empty set.
"""

from __future__ import annotations

Origin = tuple[int, bool]


class OriginTable:
    """Interns origin sets; merging two sets keeps ``is_output`` if either had it."""

    def __init__(self):
        self._sets: list[tuple[Origin, ...]] = [()]
        self._ids: dict[tuple[Origin, ...], int] = {(): 0}
        self._unions: dict[tuple[int, ...], int] = {}

    def intern(self, origins) -> int:
        """The id of a set of ``(layer_id, is_output)`` pairs (outputs win over parts)."""
        best: dict[int, bool] = {}
        for layer, out in origins:
            best[layer] = best.get(layer, False) or bool(out)
        key = tuple(sorted(best.items()))
        sid = self._ids.get(key)
        if sid is None:
            sid = len(self._sets)
            self._sets.append(key)
            self._ids[key] = sid
        return sid

    def get(self, set_id: int) -> tuple[Origin, ...]:
        """The members of an origin set."""
        return self._sets[set_id]

    def union(self, set_ids) -> int:
        """The id of the union of several origin sets."""
        key = tuple(sorted(set(i for i in set_ids if i)))
        if len(key) <= 1:
            return key[0] if key else 0
        sid = self._unions.get(key)
        if sid is None:
            sid = self.intern(o for i in key for o in self._sets[i])
            self._unions[key] = sid
        return sid

    def as_parts(self, set_id: int) -> int:
        """The same layers with ``is_output`` cleared (a piece that serves, not produces)."""
        return self.intern((layer, False) for layer, _ in self._sets[set_id])

    def layers(self, set_id: int) -> tuple[int, ...]:
        """The layer ids of a set."""
        return tuple(layer for layer, _ in self._sets[set_id])

    def to_json(self) -> list:
        """All sets, as the bundle index stores them."""
        return [[[layer, out] for layer, out in s] for s in self._sets]

    def __len__(self) -> int:
        return len(self._sets)

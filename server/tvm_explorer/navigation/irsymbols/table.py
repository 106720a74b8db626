"""A document's symbols: every definition and use of a name, with exact offsets.

Built once per document by a lexer (``tvmscript.py`` for Relax/TIR, ``clike.py`` for C and
CUDA); every question is then a binary search over occurrences sorted by offset.
"""

from __future__ import annotations

from bisect import bisect_right
from dataclasses import dataclass

DEF, READ, WRITE = "def", "read", "write"


@dataclass(frozen=True, slots=True)
class Occurrence:
    """One occurrence of a name: ``[start, end)`` of the name itself, its role, the symbol it
    resolves to (the index of its definition in ``SymbolTable.defs``) and ``[stmt_start,
    stmt_end)``, the statement it stands in (a binding, a store, an allocation)."""

    start: int
    end: int
    name: str
    role: str
    symbol: int
    stmt_start: int
    stmt_end: int
    kind: str = ""  # for definitions: "function", "binding", "param", "loop", "local"


class SymbolTable:
    """Occurrences of one document, sorted by start; ``defs[i]`` is symbol ``i``'s definition."""

    def __init__(self, defs: list[Occurrence], occurrences: list[Occurrence]):
        self.defs = defs
        self.occurrences = sorted(occurrences, key=lambda o: o.start)
        self._starts = [o.start for o in self.occurrences]
        self._by_symbol: dict[int, list[Occurrence]] = {}
        for occ in self.occurrences:
            self._by_symbol.setdefault(occ.symbol, []).append(occ)

    def at(self, offset: int) -> Occurrence | None:
        """The occurrence containing ``offset`` (a cursor right after a name counts)."""
        i = bisect_right(self._starts, offset) - 1
        if i >= 0 and offset <= self.occurrences[i].end:
            return self.occurrences[i]
        return None

    def of_symbol(self, symbol: int) -> list[Occurrence]:
        """Every occurrence of a symbol (its definition included), in document order."""
        return self._by_symbol.get(symbol, [])

    def __len__(self) -> int:
        return len(self.occurrences)


class Builder:
    """Collects definitions (per scope) and candidate uses, then resolves uses to symbols."""

    def __init__(self):
        self.defs: list[Occurrence] = []
        self._scoped: dict[tuple[str, str], list[int]] = {}
        self._uses: list[tuple[int, int, str, str, str, int, int]] = []

    def define(self, scope: str, start: int, end: int, name: str, kind: str,
               stmt_start: int, stmt_end: int) -> None:
        """A definition of ``name`` in ``scope`` ("" is the module)."""
        self._scoped.setdefault((scope, name), []).append(len(self.defs))
        self.defs.append(Occurrence(start, end, name, DEF, len(self.defs), stmt_start, stmt_end, kind))

    def use(self, scope: str, start: int, end: int, name: str, role: str,
            stmt_start: int, stmt_end: int) -> None:
        """A use of ``name`` in ``scope``; kept only if some definition matches."""
        self._uses.append((start, end, name, role, scope, stmt_start, stmt_end))

    def _resolve(self, scope: str, name: str, offset: int) -> int | None:
        for where in (scope, ""):
            found = self._lookup.get((where, name))
            if found:
                # The nearest definition before the use (names are reused by sibling loops),
                # else the first one (a function called before its definition); found by
                # bisection (a name defined thousands of times made this quadratic).
                all_starts, all_ids, body_starts, body_ids = found
                i = bisect_right(body_starts, offset)
                if i:
                    return body_ids[i - 1]
                if body_ids:
                    return body_ids[0]
                i = bisect_right(all_starts, offset)
                return all_ids[i - 1] if i else all_ids[0]
        return None

    def _prepare(self) -> None:
        """Per (scope, name): its definitions' starts and numbers in document order, all and
        without declarations (what ``_resolve`` bisects)."""
        self._lookup = {}
        defs = self.defs
        for key, ids in self._scoped.items():
            ordered = sorted(ids, key=lambda i: (defs[i].start, i))
            if ordered != ids and any(defs[a].start == defs[b].start for a, b in zip(ordered, ordered[1:])):
                ordered = ids  # same start twice: keep definition order (never seen)
            bodies = [i for i in ordered if defs[i].kind != "declaration"]
            self._lookup[key] = ([defs[i].start for i in ordered], ordered,
                                 [defs[i].start for i in bodies], bodies)

    def build(self) -> SymbolTable:
        """The table: definitions plus every use that resolves."""
        occurrences = list(self.defs)
        self._prepare()
        for start, end, name, role, scope, s0, s1 in self._uses:
            symbol = self._resolve(scope, name, start)
            if symbol is not None:
                occurrences.append(Occurrence(start, end, name, role, symbol, s0, s1))
        return SymbolTable(self.defs, occurrences)

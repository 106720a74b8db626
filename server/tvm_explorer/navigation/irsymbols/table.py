"""A document's symbols: every definition and use of a name, with exact offsets.

Built once per document by a lexer (``tvmscript.py`` for Relax/TIR, ``clike.py`` for C and
CUDA); every question is then a binary search over occurrences sorted by offset.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from dataclasses import dataclass

DEF, READ, WRITE = "def", "read", "write"


@dataclass(frozen=True, slots=True)
class Occurrence:
    """One occurrence of a name: ``[start, end)`` of the name itself, its role, the symbol it
    resolves to (the start of its definition: unique in a document) and ``[stmt_start,
    stmt_end)``, the statement it stands in (a binding, a store, an allocation)."""

    start: int
    end: int
    name: str
    role: str
    symbol: int
    stmt_start: int
    stmt_end: int
    kind: str = ""  # for definitions: "function", "declaration", "binding", "param", "loop", "local"


class SymbolTable:
    """Occurrences of one document or of one stretch of it, sorted by start; ``defs[s]`` is
    the definition of symbol ``s`` (every definition a use here resolves to)."""

    def __init__(self, defs: dict[int, Occurrence], occurrences: list[Occurrence]):
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
        """Every occurrence of a symbol here (its definition included if here), in order."""
        return self._by_symbol.get(symbol, [])

    def between(self, start: int, end: int) -> list[Occurrence]:
        """The occurrences starting in ``[start, end)``, in order."""
        return self.occurrences[bisect_left(self._starts, start) : bisect_left(self._starts, end)]

    def __len__(self) -> int:
        return len(self.occurrences)


class Builder:
    """Collects definitions (per scope) and candidate uses, then resolves uses to symbols.

    A builder for one stretch ``[lo, hi)`` of a document (one function, lexed alone) is given
    the document's module-level definitions up front (``module``): the stretch's own lexing
    then finds its module-level definitions again, and ``module_found`` lists their starts,
    and ``open_at_end`` says whether a statement or block was still open where the stretch
    ends (the caller checks both: either means the document was cut in the wrong place)."""

    def __init__(self, module: list[Occurrence] | None = None, lo: int = 0, hi: int | None = None):
        self.defs: dict[int, Occurrence] = {}
        self._scoped: dict[tuple[str, str], list[int]] = {}
        self._uses: list[tuple[int, int, str, str, str, int, int]] = []
        self._lo, self._hi = lo, hi
        self._preset = module is not None
        self.module_found: list[int] = []
        self.open_at_end = False
        for d in module or ():
            self._add("", d)

    def _add(self, scope: str, occ: Occurrence) -> None:
        if occ.start in self.defs:
            return
        self._scoped.setdefault((scope, occ.name), []).append(occ.start)
        self.defs[occ.start] = occ

    def define(self, scope: str, start: int, end: int, name: str, kind: str, stmt_start: int, stmt_end: int) -> None:
        """A definition of ``name`` in ``scope`` ("" is the module)."""
        if self._preset and scope == "":
            self.module_found.append(start)
            if start in self.defs:
                return
        self._add(scope, Occurrence(start, end, name, DEF, start, stmt_start, stmt_end, kind))

    def use(self, scope: str, start: int, end: int, name: str, role: str, stmt_start: int, stmt_end: int) -> None:
        """A use of ``name`` in ``scope``; kept only if some definition matches."""
        self._uses.append((start, end, name, role, scope, stmt_start, stmt_end))

    def _resolve(self, scope: str, name: str, offset: int) -> int | None:
        for where in (scope, ""):
            found = self._lookup.get((where, name))
            if found:
                # The nearest definition before the use (names are reused by sibling loops),
                # else the first one (a function called before its definition); found by
                # bisection (a name defined thousands of times made this quadratic).
                all_starts, body_starts = found
                i = bisect_right(body_starts, offset)
                if i:
                    return body_starts[i - 1]
                if body_starts:
                    return body_starts[0]
                i = bisect_right(all_starts, offset)
                return all_starts[i - 1] if i else all_starts[0]
        return None

    def _prepare(self) -> None:
        """Per (scope, name): its definitions' starts in document order, all and without
        declarations (what ``_resolve`` bisects)."""
        self._lookup = {}
        defs = self.defs
        for key, starts in self._scoped.items():
            ordered = sorted(starts)
            self._lookup[key] = (ordered, [s for s in ordered if defs[s].kind != "declaration"])

    def build(self) -> SymbolTable:
        """The table: the definitions in the stretch plus every use that resolves."""
        lo, hi = self._lo, self._hi
        occurrences = [d for d in self.defs.values() if lo <= d.start and (hi is None or d.start < hi)]
        self._prepare()
        used: dict[int, Occurrence] = {}
        for start, end, name, role, scope, s0, s1 in self._uses:
            symbol = self._resolve(scope, name, start)
            if symbol is not None:
                occurrences.append(Occurrence(start, end, name, role, symbol, s0, s1))
                used[symbol] = self.defs[symbol]
        kept = {d.start: d for d in occurrences if d.role == DEF}
        kept.update(used)
        return SymbolTable(kept, occurrences)

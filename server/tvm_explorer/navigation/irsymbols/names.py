"""What the one-name lookups of C (``clike_names.py``) and TVMScript (``script_names.py``)
share: the walk over a name's occurrences in one function and the plain-text reading of
what follows a name.

A function's structure (its statements or logical lines) tells, for each occurrence, the
unit of text to lex if plain text cannot tell how it is used. The occurrences that may
define the name are lexed first; if the name is then defined nowhere (a type, ``T``,
``threadIdx``), nothing of it is kept and nothing more is lexed; else the units only lexing
can read are lexed, and every other occurrence is a plain read or write.
"""

from __future__ import annotations

import re
from array import array
from bisect import bisect_right

from tvm_explorer.navigation.irsymbols.lexer import word_starts
from tvm_explorer.navigation.irsymbols.table import READ, WRITE, Builder, Occurrence, SymbolTable

# How a name stands, from a look at plain text: it may be defined there (lex its unit before
# anything else), only lexing can tell (lex its unit if the name is defined somewhere), it is
# no name there (a member, an attribute, inside a comment or string); or READ, WRITE.
DEFINE, LEX, SKIP = "define", "lex", "skip"

_ASSIGNING = frozenset(("+=", "-=", "*=", "/="))
SPACE = re.compile(r"\s*")


class StructureMismatch(Exception):
    """A unit lexed to other boundaries than the structure scan found, or a function
    defines module-level names the document's outline did not see."""


def role_after(text: str, end: int, hi: int, space: re.Pattern = SPACE, hidden: str = "\"'/#") -> str:
    """WRITE if an assignment (``=``, ``+=``, ``-=``, ``*=``, ``/=``: the lexers'
    assignment tokens) follows the name ending at ``end``, after one ``[…]`` maybe; READ if
    anything else does; LEX if a character that may begin a comment or a string
    (``hidden``) is in the way, or ``hi`` comes first. ``space`` is what may stand between
    (a pattern that matches the empty string too: it always matches)."""
    m = space.match(text, end)
    assert m is not None
    j = m.end()
    if j < hi and text[j] == "[":
        depth = 0
        while j < hi:
            c = text[j]
            if c in "([{":
                depth += 1
            elif c in ")]}":
                depth -= 1
                if depth == 0:
                    break
            elif c in hidden:
                return LEX
            j += 1
        m = space.match(text, j + 1)
        assert m is not None
        j = m.end()
    if j >= hi:
        return LEX
    pair = text[j : j + 2]
    if pair in _ASSIGNING or (pair[:1] == "=" and pair != "=="):
        return WRITE
    return LEX if pair[:1] in hidden else READ


class NameLookup:
    """One function ``[lo, hi)`` of a document, asked about one name at a time. Subclasses
    scan its structure into units (``_starts``: where each begins) and say how an occurrence
    stands (``_plain``), how to lex a unit into a builder (``_lex``) and where a plain use's
    statement is (``_use``)."""

    _lo: int
    _hi: int
    _module: list[Occurrence]
    _starts: array  # where each unit (a statement, a logical line) begins, in order

    def __len__(self) -> int:
        """Units (a measure of what it holds)."""
        return len(self._starts)

    def _unit(self, offset: int) -> int:
        """The unit that holds ``offset``."""
        return bisect_right(self._starts, offset) - 1

    def _span(self, k: int) -> tuple[int, int]:
        """Where unit ``k`` begins and ends."""
        return self._starts[k], self._starts[k + 1] if k + 1 < len(self._starts) else self._hi

    def table(self, text: str, name: str) -> SymbolTable:
        """Every definition and resolved use of ``name`` in the function, as a table of the
        whole function has them (its builder given the document's module-level definitions);
        ``text`` is the document's."""
        b = Builder(self._module, self._lo, self._hi)
        first: set[int] = set()
        later: set[int] = set()
        plain: list[tuple[int, int, str]] = []
        for at in word_starts(text, name, self._lo, self._hi):
            k = self._unit(at)
            seen = self._plain(text, at, at + len(name), k)
            if seen == DEFINE:
                first.add(k)
            elif seen == LEX:
                later.add(k)
            elif seen != SKIP:
                plain.append((at, k, seen))
        for k in sorted(first):
            self._lex(text, b, k)
        if b.module_found and not set(b.module_found) <= {d.start for d in self._module}:
            raise StructureMismatch(f"module-level definitions at {sorted(b.module_found)}")
        if not any(d.name == name for d in b.defs.values()):
            return SymbolTable({}, [])  # nothing for its uses to resolve to: none are kept
        for k in sorted(later - first):
            self._lex(text, b, k)
        lexed = first | later
        for at, k, role in plain:
            if k not in lexed:  # else used there already
                scope, stmt_start, stmt_end = self._use(text, at, k)
                b.use(scope, at, at + len(name), name, role, stmt_start, stmt_end)
        built = b.build()
        return SymbolTable(
            {s: d for s, d in built.defs.items() if d.name == name}, [o for o in built.occurrences if o.name == name]
        )

    def _plain(self, text: str, start: int, end: int, k: int) -> str:
        raise NotImplementedError

    def _lex(self, text: str, b: Builder, k: int) -> None:
        raise NotImplementedError

    def _use(self, text: str, at: int, k: int) -> tuple[str, int, int]:
        raise NotImplementedError

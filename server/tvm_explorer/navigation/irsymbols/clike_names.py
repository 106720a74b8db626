"""The symbols of one name in one function of C or CUDA, without lexing the whole function.

A kernel TVM generates for CUDA can be 180 KB of unrolled code: lexing it took ~100 ms (pure
Python, two microseconds a token), too slow for the first question about it. A question is
about one name, and in C a name is either module-level (the document outline has those) or
local to its function, where a use resolves to the nearest definition before it. So only the
occurrences of that name matter, each inside one statement: a scan of the function's
structure (every ``;``, ``{`` and ``}`` outside comments and strings, a few milliseconds)
gives each statement's start, depth and enclosing function; then the statements where the
name may be defined, written or misread by a shortcut are lexed and walked exactly as
``clike.py`` walks a whole stretch, and every other occurrence is a plain read.

``ClikeStretch.table(text, name)`` answers what the stretch's whole table answers for ``name``
(tests/lsp/test_ir_symbol_stretches.py compares them on real bundles). ``StructureMismatch``
says the scan and the lexer disagree about where statements end: the caller lexes whole.
"""

from __future__ import annotations

import re
from array import array
from bisect import bisect_right

from ..background import REQUESTS
from .clike import _QUALIFIED_CALL, _statement_end, clike_statement
from .lexer import clike_statements, word_starts
from .table import Builder, Occurrence, SymbolTable

_BOUNDARY = frozenset("{};")
_FOR_OPEN = re.compile(r"for\s*\(")
# After a name, what can make it a definition (``int x = …``, ``int x;``, ``float x[8];``)
# or hide something from a look at plain text (a comment, a preprocessor line).
_MAY_DEFINE = frozenset("=;[/#")
_ASSIGNING = frozenset(("+=", "-=", "*=", "/="))
_SPACE = re.compile(r"\s*")
_NOT_TYPE_CHAR = re.compile(r"[^\w\s*&]")
_LAST_WORD = re.compile(r"(\w+)\s*$")


def _not_a_type(before: str) -> bool:
    """Whether the text from a statement's start (after ``for (``) to a name surely is no
    declaration's type (``clike._is_type_prefix``: names, ``*``, ``&``, qualifier calls):
    something else stands in it, and not a comment, string or preprocessor line."""
    head = _FOR_OPEN.match(before)
    prefix = before[head.end():] if head else before
    other = _NOT_TYPE_CHAR.search(prefix)
    if other is None or other.group() in "/\"'#":
        return False
    if other.group() == "(":
        word = _LAST_WORD.search(prefix, 0, other.start())
        return word is None or word.group(1) not in _QUALIFIED_CALL
    return True


def role_after(text: str, end: int, hi: int, space: re.Pattern = _SPACE, hidden: str = "\"'/#") -> str:
    """"write" if an assignment (``=``, ``+=``, ``-=``, ``*=``, ``/=``: the lexers'
    assignment tokens) follows the name ending at ``end``, after one ``[…]`` maybe; "read" if
    anything else does; "lex" if a character that may begin a comment or a string
    (``hidden``) is in the way, or ``hi`` comes first. ``space`` is what may stand between."""
    j = space.match(text, end).end()
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
                return "lex"
            j += 1
        j = space.match(text, j + 1).end()
    if j >= hi:
        return "lex"
    pair = text[j:j + 2]
    if pair in _ASSIGNING or (pair[:1] == "=" and pair != "=="):
        return "write"
    return "lex" if pair[:1] in hidden else "read"


class StructureMismatch(Exception):
    """A statement lexed to other boundaries than the structure scan found."""


class ClikeStretch:
    """One stretch ``[lo, hi)`` of a C or CUDA document (outside any brace at both ends):
    where each statement starts, how deep in braces and in which function."""

    def __init__(self, text: str, lo: int, hi: int, module: list[Occurrence]):
        self._lo, self._hi, self._module = lo, hi, module  # the text is not kept: the reader's cache bounds texts
        functions = sorted((d for d in module if lo <= d.start < hi and d.kind == "function"),
                           key=lambda d: d.start)
        self._cuts, self._depths, self._scopes = array("q", [lo]), array("l", [0]), [""]
        self._skipped = array("q")  # start, end, start, end, … of comments and strings
        depth, scope, f = 0, "", 0
        for n, (start, end, punct) in enumerate(clike_statements(text, lo, hi)):
            if not n & 0x3FF:
                REQUESTS.checkpoint()  # on a warm-up: requests go first (see ``background``)
            while f < len(functions) and functions[f].start < start:
                if depth == 0:
                    scope = functions[f].name
                f += 1
            if not punct:
                self._skipped.extend((start, end))
                continue
            if punct == "{":
                depth += 1
            elif punct == "}":
                depth -= 1
                if depth <= 0:
                    depth, scope = 0, ""
            elif depth == 0:
                scope = ""
            self._cuts.append(end)
            self._depths.append(depth)
            self._scopes.append(scope)
        self.open_at_end = depth > 0

    def __len__(self) -> int:
        """Statements (a measure of what it holds)."""
        return len(self._cuts)

    def table(self, text: str, name: str) -> SymbolTable:
        """Every definition and resolved use of ``name`` in the stretch, as the stretch's whole
        table has them (``Builder`` given the document's module-level definitions); ``text``
        is the document's."""
        lo, hi = self._lo, self._hi
        b = Builder(self._module, lo, hi)
        lexed: set[int] = set()
        plain: list[tuple[int, int, str]] = []
        for at in word_starts(text, name, lo, hi):
            if self._in_skipped(at):
                continue
            k = bisect_right(self._cuts, at) - 1
            seen = self._plain(text, at, at + len(name), k)
            if seen == "lex":
                lexed.add(k)
            elif seen != "member":
                plain.append((at, k, seen))
        for k in sorted(lexed):
            self._lex(text, b, k)
        if b.module_found and not set(b.module_found) <= {d.start for d in self._module}:
            raise StructureMismatch(f"module-level definitions at {sorted(b.module_found)}")
        if not any(d.name == name for d in b.defs.values()):
            return SymbolTable({}, [])  # nothing for its uses to resolve to: none are kept
        for at, k, role in plain:
            if k in lexed:
                continue  # its statement was lexed for another occurrence: used there
            line_start = text.rfind("\n", 0, at) + 1
            head = text[line_start:at]
            b.use(self._scopes[k], at, at + len(name), name, role,
                  line_start + len(head) - len(head.lstrip()), _statement_end(text, at))
        built = b.build()
        mine = [o for o in built.occurrences if o.name == name]
        return SymbolTable({s: d for s, d in built.defs.items() if d.name == name}, mine)

    # -- one occurrence --------------------------------------------------------------------

    def _plain(self, text: str, start: int, end: int, k: int) -> str:
        """How the name at ``[start, end)`` in statement ``k`` is used when plain text tells
        for sure: "read", "write", "member" (after ``.`` or ``->``: not a name); "lex" when
        only lexing can tell (outside functions, where parameters and functions are defined;
        before what may define it; next to a comment, a string or a number)."""
        if self._depths[k] == 0:
            return "lex"
        if text[start - 1] == "." or text[start - 2:start] == "->":
            return self._member(text, start - 1, self._cuts[k])
        before = text[self._cuts[k]:start].rstrip()
        last = self._cuts[k] + len(before) - 1  # where what stands before it ends
        before = before.lstrip()
        if not before or _FOR_OPEN.fullmatch(before):
            # First in its statement (or ``for (i = …``): nothing before it to make it a
            # definition; a write if an assignment follows, after one index maybe.
            return role_after(text, end, self._hi)
        if self._in_skipped(last):
            return "lex"
        if before.endswith("->") or before.endswith("."):
            return self._member(text, last, self._cuts[k])
        after = text[end:end + 64].lstrip()
        if not after or after[0] in _MAY_DEFINE:
            # ``NAME =``/``NAME;``/``NAME[`` define it only after a type (``float2 v =``).
            return "read" if after[:1] in ("=", ";", "[") and _not_a_type(before) else "lex"
        return "read"

    def _member(self, text: str, last: int, cut: int) -> str:
        """After ``->`` or a dot ending at ``last``: "member" (``a.x``, ``v_2.x``, ``a[i].x``,
        ``p->x``), or "lex" if the dot may be part of a number (``1.x``, ``1.5.x``: only a
        word starting with a digit begins one) or of a comment."""
        if self._in_skipped(last):
            return "lex"
        if text[last] == ">":
            return "member"
        j = last
        while j > cut and (text[j - 1].isalnum() or text[j - 1] in "_."):
            j -= 1
        return "lex" if text[j].isdigit() else "member"

    def _in_skipped(self, offset: int) -> bool:
        i = bisect_right(self._skipped, offset)
        return i % 2 == 1  # after a start, before its end

    def _lex(self, text: str, b: Builder, k: int) -> None:
        start = self._cuts[k]
        end = self._cuts[k + 1] if k + 1 < len(self._cuts) else self._hi
        tokens = clike_statement(b, text, start, end, self._depths[k], self._scopes[k])
        ends = [i for i, t in enumerate(tokens) if t.kind == "op" and t.text in _BOUNDARY]
        if ends and ends != [len(tokens) - 1]:
            raise StructureMismatch(f"statement at {start} holds {len(ends)} boundaries")

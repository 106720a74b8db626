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

``ClikeStretch.table(text, name)`` (``names.NameLookup``) answers what the stretch's whole
table answers for ``name`` (tests/lsp/test_ir_symbol_stretches.py compares them on real
bundles); ``StructureMismatch`` says the scan and the lexer disagree: the caller lexes whole.
"""

from __future__ import annotations

import re
from array import array
from bisect import bisect_right

from tvm_explorer.navigation.background import REQUESTS
from tvm_explorer.navigation.irsymbols.clike import _QUALIFIED_CALL, _statement_end, clike_statement
from tvm_explorer.navigation.irsymbols.lexer import clike_statements, dotted_run_start
from tvm_explorer.navigation.irsymbols.names import DEFINE, SKIP, NameLookup, StructureMismatch, role_after
from tvm_explorer.navigation.irsymbols.table import READ, Builder, Occurrence

_BOUNDARY = frozenset("{};")
_FOR_OPEN = re.compile(r"for\s*\(")
# After a name, what can make it a definition (``int x = …``, ``int x;``, ``float x[8];``)
# or hide something from a look at plain text (a comment, a preprocessor line).
_MAY_DEFINE = frozenset("=;[/#")
_NOT_TYPE_CHAR = re.compile(r"[^\w\s*&]")
_LAST_WORD = re.compile(r"(\w+)\s*$")


def _not_a_type(before: str) -> bool:
    """Whether the text from a statement's start (after ``for (``) to a name surely is no
    declaration's type (``clike._is_type_prefix``: names, ``*``, ``&``, qualifier calls):
    something else stands in it, and not a comment, string or preprocessor line."""
    head = _FOR_OPEN.match(before)
    prefix = before[head.end() :] if head else before
    other = _NOT_TYPE_CHAR.search(prefix)
    if other is None or other.group() in "/\"'#":
        return False
    if other.group() == "(":
        word = _LAST_WORD.search(prefix, 0, other.start())
        return word is None or word.group(1) not in _QUALIFIED_CALL
    return True


class ClikeStretch(NameLookup):
    """One stretch ``[lo, hi)`` of a C or CUDA document (outside any brace at both ends):
    where each statement starts, how deep in braces and in which function."""

    def __init__(self, text: str, lo: int, hi: int, module: list[Occurrence]):
        self._lo, self._hi, self._module = lo, hi, module  # the text is not kept: the reader's cache bounds texts
        functions = sorted((d for d in module if lo <= d.start < hi and d.kind == "function"), key=lambda d: d.start)
        self._starts, self._depths, self._scopes = array("q", [lo]), array("l", [0]), [""]
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
            self._starts.append(end)
            self._depths.append(depth)
            self._scopes.append(scope)
        self.open_at_end = depth > 0

    def _use(self, text: str, at: int, k: int) -> tuple[str, int, int]:
        line_start = text.rfind("\n", 0, at) + 1
        head = text[line_start:at]
        return self._scopes[k], line_start + len(head) - len(head.lstrip()), _statement_end(text, at)

    # -- one occurrence --------------------------------------------------------------------

    def _plain(self, text: str, start: int, end: int, k: int) -> str:
        """How the name at ``[start, end)`` in statement ``k`` stands (``names``): READ, WRITE,
        SKIP (after ``.`` or ``->``, in a comment or string), DEFINE (outside functions,
        where parameters and functions are defined; before what may define it; next to a
        comment or a number), LEX (first in its statement, an index or comment after it)."""
        if self._in_skipped(start):
            return SKIP
        if self._depths[k] == 0:
            return DEFINE
        if text[start - 1] == "." or text[start - 2 : start] == "->":
            return self._member(text, start - 1, self._starts[k])
        before = text[self._starts[k] : start].rstrip()
        last = self._starts[k] + len(before) - 1  # where what stands before it ends
        before = before.lstrip()
        if not before or _FOR_OPEN.fullmatch(before):
            # First in its statement (or ``for (i = …``): nothing before it to make it a
            # definition; a write if an assignment follows, after one index maybe.
            return role_after(text, end, self._hi)
        if self._in_skipped(last):
            return DEFINE
        if before.endswith("->") or before.endswith("."):
            return self._member(text, last, self._starts[k])
        after = text[end : end + 64].lstrip()
        if not after or after[0] in _MAY_DEFINE:
            # ``NAME =``/``NAME;``/``NAME[`` define it only after a type (``float2 v =``).
            return READ if after[:1] in ("=", ";", "[") and _not_a_type(before) else DEFINE
        return READ

    def _member(self, text: str, last: int, cut: int) -> str:
        """After ``->`` or a dot ending at ``last``: SKIP, a member (``a.x``, ``v_2.x``,
        ``a[i].x``, ``p->x``), or DEFINE if the dot may be part of a number (``1.x``,
        ``1.5.x``: only a word starting with a digit begins one) or of a comment."""
        if self._in_skipped(last):
            return DEFINE
        if text[last] == ">":
            return SKIP
        return DEFINE if text[dotted_run_start(text, last, cut)].isdigit() else SKIP

    def _in_skipped(self, offset: int) -> bool:
        i = bisect_right(self._skipped, offset)
        return i % 2 == 1  # after a start, before its end

    def _lex(self, text: str, b: Builder, k: int) -> None:
        start, end = self._span(k)
        tokens = clike_statement(b, text, start, end, self._depths[k], self._scopes[k])
        ends = [i for i, t in enumerate(tokens) if t.kind == "op" and t.text in _BOUNDARY]
        if ends and ends != [len(tokens) - 1]:
            raise StructureMismatch(f"statement at {start} holds {len(ends)} boundaries")

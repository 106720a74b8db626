"""The symbols of one name in one function of TVMScript (Relax or TIR), without lexing the
whole function.

TIR after unrolling has functions of 60 KB whose lines run to hundreds of characters:
lexing one took 20–40 ms, too slow for the first question about it. Inside a module-level
function every name is in that function's scope, and a use resolves to the nearest
definition before it, so only the logical lines where the name occurs matter. A scan of the
function's lines (their bracket balance, counted on the text; lines with strings or comments
tokenized) gives where each logical line starts; then the lines where the name may be
defined, written, used as a keyword or as ``cls.NAME`` are lexed and walked exactly as
``tvmscript.py`` walks a whole stretch, and every other occurrence is a plain read.

``ScriptStretch.table(text, name)`` (``names.NameLookup``) answers what the stretch's whole
table answers for ``name`` (tests/lsp/test_ir_symbol_stretches.py compares them on real
bundles); ``StructureMismatch`` says the scan and the lexer disagree: the caller lexes whole.
"""

from __future__ import annotations

import re
from array import array
from bisect import bisect_right

from tvm_explorer.navigation.background import REQUESTS
from tvm_explorer.navigation.irsymbols.lexer import (
    SCRIPT_SKIPPED,
    dotted_run_start,
    script_bracket_balance,
    script_tokens,
)
from tvm_explorer.navigation.irsymbols.names import DEFINE, LEX, SKIP, NameLookup, StructureMismatch, role_after
from tvm_explorer.navigation.irsymbols.table import READ, Builder, Occurrence
from tvm_explorer.navigation.irsymbols.tvmscript import _lines, script_statement

# Lines that may define a name: ``def`` and its parameters, ``for``, ``with … as``, and the
# first names of a line (``a, b = …``, ``a: T = …``).
_DEFINING_LINE = re.compile(r"\s*(?:def|for|with)\b")
_LEADING_NAMES = re.compile(r"\s*(?:[A-Za-z_]\w*\s*,\s*)*")
_BLANK = re.compile(r"[ \t\r\f\v]*")  # a line break after a line's first name ends it


class ScriptStretch(NameLookup):
    """One stretch ``[lo, hi)`` of a TVMScript document beginning at a module-level ``def``
    (its first logical line): where each logical line starts."""

    def __init__(self, text: str, lo: int, hi: int, module: list[Occurrence]):
        self._lo, self._hi, self._module = lo, hi, module  # the text is not kept: the reader's cache bounds texts
        first_end = text.find("\n", lo, hi)
        head = next(
            (d for d in module if d.kind == "function" and lo <= d.start < (hi if first_end < 0 else first_end)), None
        )
        if head is None:
            raise StructureMismatch("no module-level def begins it")
        self._scope = head.name
        self._last_line: tuple[int, tuple] | None = None  # (k, _line_facts(k))
        self._starts = array("q", [lo])
        depth, pos = 0, lo
        n = 0
        while pos < hi:
            n += 1
            if not n & 0xFF:
                REQUESTS.checkpoint()  # on a warm-up: requests go first (see ``background``)
            nl = text.find("\n", pos, hi)
            end = hi if nl < 0 else nl + 1
            depth += script_bracket_balance(text[pos:end])
            if depth <= 0:
                depth = 0
                if end < hi:
                    self._starts.append(end)
            pos = end
        self.open_at_end = depth > 0

    def _use(self, text: str, at: int, k: int) -> tuple[str, int, int]:
        start, end = self._span(k)
        line = text[start:end]
        return self._scope, start + len(line) - len(line.lstrip()), start + len(line.rstrip())

    def _plain(self, text: str, start: int, end: int, k: int) -> str:
        """How the name at ``[start, end)`` in logical line ``k`` stands (``names``): READ, or
        WRITE for the buffer a store writes (``NAME[…] = …``), SKIP for an attribute after a
        dot (``T.grid``), DEFINE where it may be defined, LEX when only lexing can tell."""
        line_start, line_end, line, verdict, quoted, strings = self._line_facts(text, k)
        if verdict == DEFINE:
            return DEFINE  # a def line (and its parameters), for, with
        before = text[line_start:start]
        leading = False
        if _LEADING_NAMES.fullmatch(before):
            blank = _BLANK.match(text, end)
            assert blank is not None  # ``[…]*`` matches the empty string too
            after_blank = blank.end()
            follows = text[after_blank : after_blank + 2]
            # The first names: ``a, b = …``, ``a: T = …`` define; ``NAME[…] = …`` stores;
            # ``T.reads(…)``, ``f(…)`` do neither.
            if before.strip() or follows[:1] in (",", ":") or (follows[:1] == "=" and follows != "=="):
                return DEFINE
            leading = follows[:1] == "["
        if verdict == LEX:
            return LEX  # ``T.writes(…)`` (its names are written), or a comment
        if quoted:
            starts, ends, comment = strings
            at = start - line_start
            i = bisect_right(starts, at) - 1
            if i >= 0 and at < ends[i]:
                return SKIP  # inside a string (``dtype="float32"``)
            if comment:
                return LEX  # a comment (a ``#`` inside a string is none)
        if verdict == "edges":
            return LEX  # a number or a string may begin or end it (neither is a token here)
        if leading:
            return role_after(text, end, line_end, _BLANK, "\"'" if quoted else "")
        stripped = before.rstrip()
        if stripped.endswith("."):
            dot = line_start + len(stripped) - 1
            j = dotted_run_start(text, dot, line_start)
            if text[j].isdigit() or "cls" in text[j:dot]:
                return LEX  # in a number, or ``cls.NAME``: a use of a module function
            return SKIP  # an attribute
        after = text[end : end + 64].lstrip()
        if after.startswith("=") and not after.startswith("=="):
            return LEX  # a keyword argument (or an assignment)
        return READ

    def _line_facts(self, text: str, k: int) -> tuple[int, int, str, str, bool, tuple]:
        """``(start, end, text, verdict, quoted, strings)`` of logical line ``k``: what
        ``_plain`` asks of every occurrence on it (a name occurs on a long line hundreds of
        times, and a Relax call of a thousand-layer model holds thousands of strings), kept
        for the line asked last. ``verdict``: DEFINE for a defining line, LEX for a line
        writing buffers or with a comment outside strings (decided per occurrence when it
        has strings), "edges" when a number or string may begin or end it, else READ.
        ``strings``: the starts and ends (in the line) of its strings before its first
        comment, and whether it has a comment."""
        got = self._last_line
        if got is not None and got[0] == k:
            return got[1]
        line_start, line_end = self._span(k)
        line = text[line_start:line_end]
        quoted = '"' in line or "'" in line
        starts, ends, comment = array("q"), array("q"), False
        if quoted:
            for m in SCRIPT_SKIPPED.finditer(line):
                if m.group()[0] == "#":
                    comment = True  # what follows it is no string
                    break
                starts.append(m.start())
                ends.append(m.end())
        first, last = line.lstrip()[:1], line.rstrip()[-1:]
        if k == 0 or _DEFINING_LINE.match(line):
            verdict = DEFINE
        elif "writes" in line or ("#" in line and not quoted):
            verdict = LEX
        elif not first or first in "0123456789.\"'" or last.isalnum() or last in "_.\"'":
            verdict = "edges"
        else:
            verdict = READ
        facts = (line_start, line_end, line, verdict, quoted, (starts, ends, comment))
        self._last_line = (k, facts)
        return facts

    def _lex(self, text: str, b: Builder, k: int) -> None:
        start, end = self._span(k)
        lines = _lines(script_tokens(text, start, end), b)
        if len(lines) > 1:
            raise StructureMismatch(f"logical line at {start} lexes as {len(lines)}")
        for line in lines:
            script_statement(b, text, line, "" if k == 0 else self._scope)

"""Tokens of TVMScript and C-like text: names, punctuation and line breaks, with strings,
comments and numbers skipped (a name inside a string is not a use)."""

from __future__ import annotations

import re
from sys import intern
from typing import NamedTuple

from tvm_explorer.navigation.background import REQUESTS


class Token(NamedTuple):
    """``kind`` is "name", "op" (one punctuation character, or ``==``-like pairs) or "nl"."""

    kind: str
    start: int
    end: int
    text: str


_STRING = r""""(?:[^"\\\n]|\\.)*"|'(?:[^'\\\n]|\\.)*'"""
_CLIKE_COMMENT = r"//[^\n]*|/\*.*?\*/|^[ \t]*\#[^\n]*"  # and preprocessor lines
_COMMON = (
    r"""
  (?P<str>"""
    + _STRING
    + r""")
| (?P<num>\d[\w.]*(?:[eEpP][+-]\d+\w*)?|\.\d[\w]*)
| (?P<name>[A-Za-z_]\w*)
| (?P<nl>\n)
| (?P<op>==|!=|<=|>=|\+=|-=|\*=|/=|->|[^\s\w])
| (?P<ws>[ \t\r\f\v]+)
"""
)
_SCRIPT = re.compile(r"(?P<comment>\#[^\n]*)|" + _COMMON, re.VERBOSE)
_CLIKE = re.compile(r"(?P<comment>" + _CLIKE_COMMENT + r")|" + _COMMON, re.VERBOSE | re.DOTALL | re.MULTILINE)


def _tokens(pattern: re.Pattern, text: str, start: int, end: int | None) -> list[Token]:
    out = []
    checkpoint = REQUESTS.checkpoint
    matches = pattern.finditer(text, start, len(text) if end is None else end)
    for i, m in enumerate(matches):
        if not i & 0x3FF:  # every 1024 tokens (~2 ms): a warm-up lets requests go first
            checkpoint()
        kind = m.lastgroup
        if kind in ("name", "op", "nl"):
            # Names repeat thousands of times in a document: one string each.
            out.append(Token(kind, m.start(), m.end(), intern(m.group())))
        elif kind == "comment" and "\n" in m.group():
            out.append(Token("nl", m.end() - 1, m.end(), "\n"))
    return out


def script_tokens(text: str, start: int = 0, end: int | None = None) -> list[Token]:
    """Tokens of TVMScript (Relax or TIR) in ``text[start:end]`` (offsets into ``text``; ``start``
    at a line start), ``#`` comments and strings skipped."""
    return _tokens(_SCRIPT, text, start, end)


def clike_tokens(text: str, start: int = 0, end: int | None = None) -> list[Token]:
    """Tokens of C or CUDA in ``text[start:end]`` (offsets into ``text``), comments, strings and
    preprocessor lines skipped."""
    return _tokens(_CLIKE, text, start, end)


# What ``_CLIKE`` skips, and the punctuation that shapes blocks and statements: a scan of
# C or CUDA structure without tokenizing. Every alternative begins with a literal character
# (a preprocessor line with the line break before it) so that the regex engine skips to the
# next candidate fast: 22 ms for 3.7 MB of CUDA, where ``^`` in an alternative made it 145.
_CLIKE_SKIPPED = _STRING + r"|//[^\n]*|/\*.*?\*/|\n[ \t]*\#[^\n]*"
_CLIKE_BRACES = re.compile(r"\{|\}|" + _CLIKE_SKIPPED, re.DOTALL)
_CLIKE_STATEMENTS = re.compile(r"\{|\}|;|" + _CLIKE_SKIPPED, re.DOTALL)
_DIRECTIVE = re.compile(r"[ \t]*\#[^\n]*")


def _clike_scan(pattern: re.Pattern, text: str, start: int, end: int):
    if start == 0 or text[start - 1 : start] == "\n":  # a preprocessor line right where it starts
        m = _DIRECTIVE.match(text, start, end)
        if m:
            yield m.start(), m.end(), ""
            start = m.end()
    for m in pattern.finditer(text, start, end):
        found = m.group()
        if found in ("{", "}", ";"):
            yield m.start(), m.end(), found
        else:  # skipped: a preprocessor line's stretch begins after its line break
            yield m.start() + (found[0] == "\n"), m.end(), ""


def clike_braces(text: str):
    """``(start, end, brace)`` for every ``{`` and ``}`` of C or CUDA outside comments, strings
    and preprocessor lines (the tokens ``clike_tokens`` gives for them), and for every skipped
    stretch with ``brace`` "" (a boundary must not cut one)."""
    return _clike_scan(_CLIKE_BRACES, text, 0, len(text))


def clike_statements(text: str, start: int, end: int):
    """Like ``clike_braces`` over ``text[start:end]``, with every ``;`` too: ``(start, end,
    punctuation)``, ``punctuation`` "" for a skipped comment, string or preprocessor line."""
    return _clike_scan(_CLIKE_STATEMENTS, text, start, end)


def word_char(c: str) -> bool:
    """Whether ``c`` can be part of a name (what ``\\w`` matches)."""
    return c.isalnum() or c == "_"


def dotted_run_start(text: str, dot: int, floor: int) -> int:
    """Start of the run of word characters and dots ending at ``dot`` (not before
    ``floor``): if it begins with a digit, the dot is part of a number (``1.x``, ``1.5.x``:
    the lexers' numbers are ``\\d[\\w.]*``), else it is a member or attribute access."""
    j = dot
    while j > floor and (word_char(text[j - 1]) or text[j - 1] == "."):
        j -= 1
    return j


def word_starts(text: str, word: str, start: int = 0, end: int | None = None):
    """Start of every occurrence of ``word`` as a whole word beginning in ``text[start:end]``."""
    # A pattern starting with its literal is searched for by the regex engine's fast prefix
    # scan (40x faster than one starting with a look-behind); the character before is
    # checked here.
    end = len(text) if end is None else end
    for m in re.compile(re.escape(word) + r"(?!\w)").finditer(text, start):
        at = m.start()
        if at >= end:
            return
        if at == 0 or not word_char(text[at - 1]):
            yield at


# What ``_SCRIPT`` skips (comments first: its order at one position), leftmost first.
SCRIPT_SKIPPED = re.compile(r"\#[^\n]*|" + _STRING)


def script_bracket_balance(line: str) -> int:
    """Opening minus closing brackets of TVMScript text (one or more whole lines), those in
    strings and comments left out, as ``script_tokens`` reads them."""
    if '"' in line or "'" in line or "#" in line:
        line = SCRIPT_SKIPPED.sub("", line)
    return line.count("(") + line.count("[") + line.count("{") - line.count(")") - line.count("]") - line.count("}")


def script_line_end(text: str, start: int) -> int:
    """End of the last name or punctuation of the TVMScript logical line at ``start`` (a line
    break inside brackets does not end it), as ``script_tokens`` would group it."""
    nl = text.find("\n", start)
    line = text[start : len(text) if nl < 0 else nl].rstrip()
    # One physical line ending in punctuation (``… -> R.Tensor(…):``), brackets balanced:
    # that is its last token; anything else is walked token by token.
    if line[-1:] in (":", ")", "]", "}", ",") and "#" not in line and script_bracket_balance(line) <= 0:
        return start + len(line)
    depth, last = 0, start
    for m in _SCRIPT.finditer(text, start):
        kind = m.lastgroup
        if kind == "nl":
            if depth <= 0:
                break
        elif kind in ("name", "op"):
            t = m.group()
            if t in ("(", "[", "{"):
                depth += 1
            elif t in (")", "]", "}"):
                depth -= 1
            last = m.end()
    return last


def matching(tokens: list[Token], i: int) -> int:
    """Index of the bracket closing the one at ``i`` (or the last token)."""
    depth = 0
    for j in range(i, len(tokens)):
        t = tokens[j].text
        if t in "([{":
            depth += 1
        elif t in ")]}":
            depth -= 1
            if depth == 0:
                return j
    return len(tokens) - 1

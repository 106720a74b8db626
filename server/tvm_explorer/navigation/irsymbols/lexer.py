"""Tokens of TVMScript and C-like text: names, punctuation and line breaks, with strings,
comments and numbers skipped (a name inside a string is not a use)."""

from __future__ import annotations

import re
from typing import NamedTuple

from ..background import REQUESTS


class Token(NamedTuple):
    """``kind`` is "name", "op" (one punctuation character, or ``==``-like pairs) or "nl"."""

    kind: str
    start: int
    end: int
    text: str


_COMMON = r"""
  (?P<str>"(?:[^"\\\n]|\\.)*"|'(?:[^'\\\n]|\\.)*')
| (?P<num>\d[\w.]*(?:[eEpP][+-]\d+\w*)?|\.\d[\w]*)
| (?P<name>[A-Za-z_]\w*)
| (?P<nl>\n)
| (?P<op>==|!=|<=|>=|\+=|-=|\*=|/=|->|[^\s\w])
| (?P<ws>[ \t\r\f\v]+)
"""
_SCRIPT = re.compile(r"(?P<comment>\#[^\n]*)|" + _COMMON, re.VERBOSE)
_CLIKE = re.compile(r"(?P<comment>//[^\n]*|/\*.*?\*/|^[ \t]*\#[^\n]*)|" + _COMMON,
                    re.VERBOSE | re.DOTALL | re.MULTILINE)


def _tokens(pattern: re.Pattern, text: str) -> list[Token]:
    out = []
    checkpoint = REQUESTS.checkpoint
    for i, m in enumerate(pattern.finditer(text)):
        if not i & 0xFFF:  # every 4096 tokens (a few ms): a warm-up lets requests go first
            checkpoint()
        kind = m.lastgroup
        if kind in ("name", "op", "nl"):
            out.append(Token(kind, m.start(), m.end(), m.group()))
        elif kind == "comment" and "\n" in m.group():
            out.append(Token("nl", m.end() - 1, m.end(), "\n"))
    return out


def script_tokens(text: str) -> list[Token]:
    """Tokens of TVMScript (Relax or TIR), ``#`` comments and strings skipped."""
    return _tokens(_SCRIPT, text)


def clike_tokens(text: str) -> list[Token]:
    """Tokens of C or CUDA, comments, strings and preprocessor lines skipped."""
    return _tokens(_CLIKE, text)

"""The colors of machine code (``code/*.sass``, ``compile --sass``): per line, the address and
the trailing ``// device.cu:LINE`` as comments, the predicate (``@!P3``) as a macro, the opcode
(``FFMA.SAT``) as a keyword, registers (``R12``, ``UR4``, ``P0``, ``RZ``, ``SR_TID.X``) as types,
immediates and constant-bank offsets as numbers, labels and kernel names as functions. One
regular expression with unambiguous alternatives (no nested repetition): linear in the line."""

from __future__ import annotations

import re

from tvm_explorer.navigation.c_tokens import (
    COMMENT,
    FUNCTION,
    KEYWORD,
    MACRO,
    MAX_LINE_CHARS,
    MAX_REQUEST_CHARS,
    MAX_REQUEST_LINES,
    NUMBER,
    TYPE,
    Token,
)

_INSTRUCTION = re.compile(r"(\s*+)(/\*[0-9a-f]++\*/)(\s++)(@!?+U?P[0-9T]++\s++)?+([A-Z][A-Z0-9_.]*+)")
_OPERAND = re.compile(
    r"(?P<comment>//.*+)"
    r"|(?P<register>\b(?:U?R[0-9]++|U?RZ|U?P[0-9T]|SR_[A-Z_.0-9]++|SB[0-9])\b)"
    r"|(?P<number>-?+\b(?:0x[0-9a-fA-F]++|[0-9]++(?:\.[0-9]++)?+(?:e[+-]?+[0-9]++)?+)\b|\bQNAN\b|\bINF\b)"
    r"|(?P<label>\.L_x_[0-9]++)"
)
_OPERAND_KINDS = {"register": TYPE, "number": NUMBER, "label": FUNCTION}
_OPERAND_KINDS = {"register": TYPE, "number": NUMBER, "label": FUNCTION}
_LABEL_LINE = re.compile(r"(\.?[A-Za-z_][\w.$]*+):\s*+$")


def sass_line_tokens(line_no: int, line: str) -> list[Token]:
    """The tokens of one line of a SASS document."""
    if line.lstrip().startswith("//"):
        start = len(line) - len(line.lstrip())
        return [Token(line_no, start, len(line) - start, COMMENT)] if len(line) > start else []
    label = _LABEL_LINE.match(line)
    if label:
        return [Token(line_no, 0, len(label.group(1)), FUNCTION)]
    m = _INSTRUCTION.match(line)
    if not m:
        return []
    out = [Token(line_no, m.start(2), len(m.group(2)), COMMENT)]
    if m.group(4):
        predicate = m.group(4).rstrip()
        out.append(Token(line_no, m.start(4), len(predicate), MACRO))
    out.append(Token(line_no, m.start(5), len(m.group(5)), KEYWORD))
    for op in _OPERAND.finditer(line, m.end()):
        kind = op.lastgroup
        if kind == "comment":
            out.append(Token(line_no, op.start(), len(line) - op.start(), COMMENT))
            break
        out.append(Token(line_no, op.start(), op.end() - op.start(), _OPERAND_KINDS[kind or "label"]))
    return out


def is_sass_path(path: str) -> bool:
    """Whether a document is machine code (what these tokens are for)."""
    return path.lower().endswith(".sass")


def sass_range_tokens(lines: list[str], first: int, last: int) -> list[Token]:
    """The tokens of lines ``first``..``last`` (0-based, inclusive), within the same budget as
    generated C's (``c_tokens.range_tokens``)."""
    out: list[Token] = []
    budget = MAX_REQUEST_CHARS
    for n in range(max(0, first), min(last, len(lines) - 1, first + MAX_REQUEST_LINES - 1) + 1):
        line = lines[n][:MAX_LINE_CHARS].rstrip("\r\n")
        budget -= len(line)
        if budget < 0:
            break
        out.extend(sass_line_tokens(n, line))
    return out

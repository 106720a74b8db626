"""The colors of generated C and CUDA: tokens of the lines an editor shows, lexed on request.

A bundle's `code/` files are megabytes of one-statement lines. A TextMate grammar in the editor
tokenizes all of them when the file opens (seconds of VS Code's own thread on a 3.5 MB
`device.cu`, during which it neither syncs the document nor answers a hover); lexing only the
lines on screen, when the editor asks for them (LSP semantic tokens for a range), costs
microseconds a line. No protocol types here: `lsp/features/semantic_tokens.py` encodes them.
"""

from __future__ import annotations

import bisect
import re
from dataclasses import dataclass

# The legend, in order: a token's `kind` is its index (LSP semantic token types VS Code knows).
KINDS = ("comment", "string", "number", "keyword", "type", "function", "macro")
COMMENT, STRING, NUMBER, KEYWORD, TYPE, FUNCTION, MACRO = range(len(KINDS))

CODE_SUFFIXES = (".c", ".cu", ".h", ".cc", ".cpp")

# What one request lexes at most, so that it answers in tens of milliseconds whatever the file
# holds (the server answers every other request on the same thread): a line is colored up to
# VS Code's own limit (editor.maxTokenizationLineLength), and a range up to a screenful of such
# lines.
MAX_LINE_CHARS = 20_000
MAX_REQUEST_CHARS = 200_000
MAX_REQUEST_LINES = 5_000

_KEYWORDS = frozenset(
    """if else for while do return break continue switch case default goto sizeof
    extern static const volatile inline __global__ __device__ __host__ __shared__ __constant__
    __restrict__ __restrict restrict __launch_bounds__ __forceinline__ __noinline__ TVM_DLL
    typedef struct union enum namespace using template typename class public private protected
    constexpr operator new delete true false nullptr NULL asm __asm__ __volatile__ register
    static_assert static_cast reinterpret_cast const_cast alignas __align__""".split()
)
_TYPES = re.compile(
    r"(?:void|char|short|int|long|float|double|half|bool|signed|unsigned|auto|size_t|ptrdiff_t"
    r"|u?int(?:8|16|32|64)_t|uchar|ushort|uint|ulong|__half|half[1-4]|__nv_bfloat16|nv_bfloat16"
    r"|(?:u?char|u?short|u?int|u?long|float|double|longlong|ulonglong)[1-4]|dim3"
    r"|TVMValue|TVMFFIAny|DLTensor|DLDevice|DLDataType|TVMArray)\Z"
)
# Every alternative has one way to match a given text (possessive loops, disjoint choices), so
# a failed match gives up at once: a line costs time linear in its length whatever it holds
# (the ambiguous number pattern this replaced took 32 s on 1 500 hex digits and a letter).
# A number is lexed as C's preprocessing number (digits, letters, dots and an exponent's sign)
# and colored only when the whole of it is a C literal.
_TOKEN = re.compile(
    r"""(?P<line_comment>//.*)
    |(?P<block>/\*)
    |(?P<string>"(?:[^"\\]|\\.)*+"?|'(?:[^'\\]|\\.)*+'?)
    |(?P<number>(?<![\w.])\.?[0-9](?:[\w.]|(?<=[eEpP])[+-])*+)
    |(?P<word>[A-Za-z_]\w*+)(?P<call>\s*+\()?""",
    re.X,
)
_LITERAL = re.compile(
    r"""(?:0[xX](?:[0-9a-fA-F]++(?:\.[0-9a-fA-F]*+)?|\.[0-9a-fA-F]++)(?:[pP][+-]?[0-9]++)?
    |(?:[0-9]++(?:\.[0-9]*+)?|\.[0-9]++)(?:[eE][+-]?[0-9]++)?)[fFuUlL]*+""",
    re.X,
)
_DIRECTIVE = re.compile(r"\s*+(#\s*+\w*+)(\s*+<[^>\n]*+>)?")
_MARKS = re.compile(r'//[^\n]*+|"(?:[^"\\\n]|\\.)*+"?|/\*|\*/')


@dataclass(frozen=True)
class Token:
    """``length`` characters (code points) of ``line`` from column ``start``; ``kind`` indexes
    KINDS."""

    line: int
    start: int
    length: int
    kind: int


def is_code_path(path: str) -> bool:
    """Whether a document is generated C/C++/CUDA source (what these tokens are for)."""
    return path.lower().endswith(CODE_SUFFIXES)


class CommentMap:
    """Where block comments open and close in a text, so that lexing can start at any line
    (a range in the middle of a comment is a comment). Built once per text, by one scan."""

    def __init__(self, text: str):
        line_starts = [0]
        line_starts.extend(m.end() for m in re.finditer("\n", text))
        # Runs of lines at whose start a block comment is open: first lines, and last lines.
        self._firsts: list[int] = []
        self._lasts: list[int] = []
        inside = False
        opened = 0
        for m in _MARKS.finditer(text):
            mark = m.group()
            if inside:
                if mark == "*/":
                    inside = False
                    first = bisect.bisect_right(line_starts, opened)  # the line after the opening one
                    last = bisect.bisect_right(line_starts, m.start()) - 1  # the closing line
                    if first <= last:
                        self._firsts.append(first)
                        self._lasts.append(last)
            elif mark == "/*":
                inside, opened = True, m.start()
        if inside:
            self._firsts.append(bisect.bisect_right(line_starts, opened))
            self._lasts.append(len(line_starts) - 1)

    def open_at(self, line: int) -> bool:
        """Whether a block comment is open at the start of ``line`` (0-based)."""
        i = bisect.bisect_right(self._firsts, line) - 1
        return i >= 0 and line <= self._lasts[i]


def line_tokens(line_no: int, line: str, in_comment: bool) -> tuple[list[Token], bool]:
    """The tokens of one line (without its line break) and whether a block comment is still
    open at its end."""
    out: list[Token] = []
    pos = 0
    if in_comment:
        end = line.find("*/")
        if end < 0:
            if line:
                out.append(Token(line_no, 0, len(line), COMMENT))
            return out, True
        pos = end + 2
        out.append(Token(line_no, 0, pos, COMMENT))
    elif (directive := _DIRECTIVE.match(line)) and directive.group(1):
        out.append(Token(line_no, directive.start(1), len(directive.group(1)), MACRO))
        pos = directive.end(1)
        if directive.group(2):
            header = directive.group(2).lstrip()
            out.append(Token(line_no, directive.end(2) - len(header), len(header), STRING))
            pos = directive.end(2)
    while True:
        m = _TOKEN.search(line, pos)
        if m is None:
            return out, False
        kind = m.lastgroup
        if kind == "block":
            end = line.find("*/", m.end())
            if end < 0:
                out.append(Token(line_no, m.start(), len(line) - m.start(), COMMENT))
                return out, True
            out.append(Token(line_no, m.start(), end + 2 - m.start(), COMMENT))
            pos = end + 2
            continue
        pos = m.end()
        if kind == "line_comment":
            out.append(Token(line_no, m.start(), len(line) - m.start(), COMMENT))
        elif kind == "string":
            out.append(Token(line_no, m.start(), m.end() - m.start(), STRING))
        elif kind == "number":
            if _LITERAL.fullmatch(m.group()):
                out.append(Token(line_no, m.start(), m.end() - m.start(), NUMBER))
        else:  # a word, and whether a call's "(" follows it
            word = m.group("word")
            start = m.start("word")
            if word in _KEYWORDS:
                out.append(Token(line_no, start, len(word), KEYWORD))
            elif _TYPES.match(word):
                out.append(Token(line_no, start, len(word), TYPE))
            elif m.group("call"):
                out.append(Token(line_no, start, len(word), FUNCTION))
            pos = m.end("word")  # the "(" is not part of any token


def range_tokens(lines: list[str], first: int, last: int, comments: CommentMap) -> list[Token]:
    """The tokens of lines ``first``..``last`` (0-based, inclusive) of a document given as its
    lines (line breaks kept or not), in order, within a request's budget: each line colored up
    to MAX_LINE_CHARS, and lines colored until MAX_REQUEST_CHARS characters or
    MAX_REQUEST_LINES lines have been lexed (the rest of the range stays uncolored)."""
    out: list[Token] = []
    in_comment = comments.open_at(first)
    budget = MAX_REQUEST_CHARS
    for n in range(max(0, first), min(last, len(lines) - 1, first + MAX_REQUEST_LINES - 1) + 1):
        line = lines[n]
        cut = len(line) > MAX_LINE_CHARS
        if cut:
            line = line[:MAX_LINE_CHARS]
        line = line.rstrip("\r\n")
        budget -= len(line)
        if budget < 0:
            break
        got, in_comment = line_tokens(n, line, in_comment)
        out.extend(got)
        if cut:  # the line's end was not lexed: whether a comment is open after it, the map knows
            in_comment = comments.open_at(n + 1)
    return out

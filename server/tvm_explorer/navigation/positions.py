"""Character offsets <-> editor positions (0-based line, column in UTF-16/8/32 code units).

The index and every domain query speak character offsets (code points). Editors speak
``(line, column)`` where the column counts code units of the negotiated encoding (LSP
default: UTF-16). This module is the only place that converts between the two.
"""

from __future__ import annotations

import re
from array import array
from bisect import bisect_left, bisect_right

from tvm_explorer.navigation.background import REQUESTS

_LINE_BREAK = re.compile(r"\r\n|\n|\r")
_NEWLINE = re.compile("\n")
_after_match = re.Match.end

UNIT_BYTES = {"utf-8": 1, "utf-16": 2, "utf-32": 4}


def code_units(text: str, encoding: str) -> int:
    """Length of ``text`` in code units of ``encoding``."""
    if encoding == "utf-32":
        return len(text)
    codec = "utf-16-le" if encoding == "utf-16" else "utf-8"
    return len(text.encode(codec, "surrogatepass")) // UNIT_BYTES[encoding]


_BLOCK = 1 << 12
_NO_ENDS = array("I")  # the ends of a lean index: each line ends where the next one starts, less one
_SCAN_CHUNK = 1 << 19  # characters scanned for line breaks between two checkpoints


class LineIndex:
    """Line starts of one text, for converting offsets and positions both ways.

    A text whose only line break is "\n" (every bundle document) is indexed by the number of
    lines before each block of 4 K characters, counted by ``str.count`` (a few milliseconds
    for a 4 MB document, where a start per line took 40); a line is then found inside its
    block. Other texts keep every line's start and end.

    Given ``source`` (a function giving the text again, e.g. from the bundle's files), a
    "\n"-only text whose columns are its characters (ASCII, or no character outside one code
    unit) keeps every line's start instead and not the text: a few hundred kilobytes for a
    4 MB document, so the line indexes of a whole bundle fit in memory and converting
    positions never waits for a text to be read again. ``text`` then reads it from
    ``source`` (only finding the token under a cursor needs it)."""

    def __init__(self, text: str, encoding: str = "utf-16", source=None):
        if encoding not in UNIT_BYTES:
            raise ValueError(f"unknown position encoding {encoding!r}")
        self.encoding = encoding
        self._length = len(text)
        # Columns equal code points unless a line holds a character outside one code unit.
        self._simple = encoding == "utf-32" or text.isascii() or code_units(text, encoding) == len(text)
        self._source = source if source is not None and self._simple and "\r" not in text else None
        # Kept unless ``source`` gives it again (then "": never read, see ``text``).
        self._text = "" if self._source is not None else text
        self._blocked = self._source is None and "\r" not in text
        # Offsets as 4-byte numbers when they fit (every bundle document's do: half the memory
        # of a whole bundle's line starts, which the server keeps).
        offsets = "I" if len(text) < 2**32 else "q"
        if self._source is not None:
            self._starts = array(offsets, [0])
            for at in range(0, len(text), _SCAN_CHUNK):
                REQUESTS.checkpoint()  # on a warm-up: requests go first (a 4 MB text: ~8 ms)
                self._starts.extend(map(_after_match, _NEWLINE.finditer(text, at, at + _SCAN_CHUNK)))
            self._ends = _NO_ENDS  # each line ends one character before the next one starts
            self._lines = len(self._starts)
        elif self._blocked:
            self._block_lines = array("q", [0])  # lines ended before each block
            for at in range(0, len(text), _BLOCK):
                self._block_lines.append(self._block_lines[-1] + text.count("\n", at, at + _BLOCK))
            self._lines = self._block_lines[-1] + 1
        else:
            # Arrays, not lists: a document of a large bundle has a hundred thousand lines.
            self._starts = array(offsets, [0])
            self._ends = array(offsets)  # offset of each line's break (or of the text end)
            for match in _LINE_BREAK.finditer(text):
                self._ends.append(match.start())
                self._starts.append(match.end())
            self._ends.append(len(text))
            self._lines = len(self._starts)

    @property
    def text(self) -> str:
        """The indexed text (read again from ``source`` when it is not kept)."""
        return self._text if self._source is None else self._source()

    def held_bytes(self) -> int:
        """About how much memory this index keeps (its text, when kept, and its arrays)."""
        if self._source is not None:
            return self._starts.itemsize * len(self._starts)
        if self._blocked:
            return self._length + 8 * len(self._block_lines)
        return self._length + 2 * self._starts.itemsize * len(self._starts)

    @property
    def line_count(self) -> int:
        """Number of lines (a text ending in a line break has an empty last line)."""
        return self._lines

    def _start(self, line: int) -> int:
        if not self._blocked:
            return self._starts[line]
        if line == 0:
            return 0
        # The block where the line's break (the line-th) falls, then the breaks inside it.
        block = bisect_left(self._block_lines, line) - 1
        at, text = block * _BLOCK, self._text
        for _ in range(line - self._block_lines[block]):
            at = text.index("\n", at) + 1
        return at

    def _end(self, line: int, start: int) -> int:
        if self._source is not None:
            return self._starts[line + 1] - 1 if line + 1 < self._lines else self._length
        if not self._blocked:
            return self._ends[line]
        end = self._text.find("\n", start)
        return self._length if end < 0 else end

    def _line_of(self, offset: int) -> int:
        if not self._blocked:
            return bisect_right(self._starts, offset) - 1
        block = offset // _BLOCK
        return self._block_lines[block] + self._text.count("\n", block * _BLOCK, offset)

    def line_text(self, line: int) -> str:
        """The text of ``line`` without its line break (IndexError past the last line)."""
        span = self._span(line)
        if span is None:
            raise IndexError(f"line {line} is past the last line ({self._lines})")
        start, end = span
        return self.text[start:end]

    def position(self, offset: int) -> tuple[int, int]:
        """The (line, column) of a character offset (clamped into the text)."""
        offset = min(max(offset, 0), self._length)
        line = self._line_of(offset)
        if self._blocked:
            start = self._text.rfind("\n", 0, offset) + 1
            column_chars = offset - start
        else:
            # An offset inside a "\r\n" break belongs to the end of its line.
            start = self._starts[line]
            column_chars = min(offset, self._end(line, start)) - start
        if self._simple:
            return line, column_chars
        return line, code_units(self.text[start : start + column_chars], self.encoding)

    def offset(self, line: int, column: int) -> int | None:
        """The character offset of (line, column), or None when it lies past the line's end
        or past the last line. A column inside a surrogate pair or a UTF-8 sequence snaps to
        the start of its character."""
        span = self._span(line)
        return None if span is None or column < 0 else self._offset_in(*span, column)

    def _span(self, line: int) -> tuple[int, int] | None:
        """``[start, end)`` of ``line`` (its break left out), or None past the last line."""
        if not 0 <= line < self._lines:
            return None
        start = self._start(line)
        return start, self._end(line, start)

    def _offset_in(self, start: int, end: int, column: int) -> int | None:
        """``offset`` inside the line ``[start, end)``."""
        if self._simple:
            return start + column if column <= end - start else None
        units = 0
        for i, char in enumerate(self.text[start:end]):
            width = code_units(char, self.encoding)
            if units + width > column:
                return start + i
            units += width
        return end if units == column else None

    def token_offset(self, line: int, column: int) -> int | None:
        """The offset of the character a cursor at (line, column) points at, or None when the
        cursor is not on or right after a non-blank character (blank lines, indentation,
        past the end of a line or of the text)."""
        span = self._span(line)  # found once: in a block, finding it searches line by line
        if span is None or column < 0:
            return None
        start, end = span
        offset = self._offset_in(start, end, column)
        if offset is None:
            return None
        text = self.text
        if offset < end and not text[offset].isspace():
            return offset
        # A cursor right after a word (typical for F12 after typing) means that word.
        if offset > start and not text[offset - 1].isspace():
            return offset - 1
        return None

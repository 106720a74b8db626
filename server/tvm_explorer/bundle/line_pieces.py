"""Whole lines around spans of a document file, read without reading the whole file: what
``Bundle.whole_lines`` answers excerpts with (a hover of a 60 MB document reads a few KB)."""

from __future__ import annotations

import errno
import os

LINE_WINDOW = 4096
"""Bytes read before and after a span to find its lines' ends (doubled until found)."""


def widen(text: str, start: int, end: int) -> tuple[int, int, str]:
    """``[start, end)`` of ``text`` widened to whole lines (see ``Bundle.whole_lines``)."""
    lo = text.rfind("\n", 0, start) + 1
    hi = text.find("\n", max(end - 1, start))
    hi = len(text) if hi < 0 else hi
    return lo, hi, text[lo:hi]


def piece_around(fd: int, size: int, start: int, end: int) -> tuple[int, int, str] | None:
    """``widen`` on the file ``fd`` of ``size`` bytes, one byte per character, reading only
    around the span (None: the bytes are not plain ASCII without carriage returns)."""
    window = LINE_WINDOW
    while True:
        lo, hi = max(0, start - window), min(size, max(end, start + 1) + window)
        data = os.pread(fd, hi - lo, lo)
        if len(data) != hi - lo:
            raise OSError(errno.EIO, "short read")
        first = data.rfind(b"\n", 0, start - lo) + 1
        last = data.find(b"\n", max(end - 1, start) - lo)
        if (first > 0 or lo == 0) and (last >= 0 or hi == size):
            break
        window *= 4
    last = len(data) if last < 0 else last
    piece = data[first:last]
    if not piece.isascii() or b"\r" in piece:
        return None
    return lo + first, lo + last, piece.decode("ascii")


def pieces_around(fd: int, size: int, spans: list[tuple[int, int]]) -> list[tuple[int, int, str]] | None:
    """``piece_around`` of each span (in order), spans near each other read in one piece."""
    out = []
    i = 0
    while i < len(spans):
        j = i
        while j + 1 < len(spans) and spans[j + 1][0] - spans[j][1] < LINE_WINDOW:
            j += 1
        lo = max(0, min(spans[i][0], size) - LINE_WINDOW)
        hi = min(size, max(spans[j][1], spans[i][0] + 1) + LINE_WINDOW)
        data = os.pread(fd, hi - lo, lo)
        if len(data) != hi - lo:
            raise OSError(errno.EIO, "short read")
        for start, end in spans[i : j + 1]:
            start, end = min(start, size), min(end, size)
            first = data.rfind(b"\n", 0, start - lo) + 1
            last = data.find(b"\n", max(end - 1, start) - lo)
            if (first == 0 and lo > 0) or (last < 0 and hi < size):
                piece = piece_around(fd, size, start, end)  # a line longer than the window
            else:
                last = len(data) if last < 0 else last
                chunk = data[first:last]
                piece = (
                    (lo + first, lo + last, chunk.decode("ascii")) if chunk.isascii() and b"\r" not in chunk else None
                )
            if piece is None:
                return None
            out.append(piece)
        i = j + 1
    return out


def merge_pieces(pieces: list[tuple[int, int, str]]) -> list[tuple[int, int, str]]:
    """Whole-line pieces in order, those that overlap or follow each other line after line joined."""
    out: list[tuple[int, int, str]] = []
    for start, end, text in sorted(pieces):
        if out and start <= out[-1][1] + 1:  # overlapping, or on the next line
            s0, e0, t0 = out[-1]
            if end > e0:
                out[-1] = (s0, end, t0 + "\n" + text[e0 + 1 - start :])
            continue
        out.append((start, end, text))
    return out

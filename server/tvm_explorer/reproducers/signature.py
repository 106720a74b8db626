"""Reading a printed PrimFunc's signature (argument names, shapes, dtypes) from its text."""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass

_DEF = re.compile(r"def (\w+)\((.*)\)(?: -> [^:]+)?:\s*$")
_INT = re.compile(r"^(?:T\.int(?:32|64)\()?(-?\d+)\)?$")


@dataclass(frozen=True)
class Argument:
    """One argument of a PrimFunc: a buffer with a static shape (or a non-buffer value)."""

    name: str
    shape: tuple[int, ...] | None
    dtype: str | None

    @property
    def is_buffer(self) -> bool:
        return self.shape is not None


def bracket_depths(text: str, start: int = 0) -> Iterator[tuple[int, str, int | None]]:
    """``(index, character, depth)`` for each character of ``text`` from ``start``: the number
    of brackets open after it, or None inside a string (its quotes included)."""
    depth = 0
    quote: str | None = None
    for i in range(start, len(text)):
        ch = text[i]
        if quote:
            if ch == quote:
                quote = None
            yield i, ch, None
            continue
        if ch in "\"'":
            quote = ch
            yield i, ch, None
            continue
        if ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
        yield i, ch, depth


def split_top(text: str, sep: str = ",") -> list[str]:
    """``text`` split at ``sep`` outside brackets and strings."""
    out: list[str] = []
    cur: list[str] = []
    for _, ch, depth in bracket_depths(text):
        if ch == sep and depth == 0:
            out.append("".join(cur).strip())
            cur = []
            continue
        cur.append(ch)
    tail = "".join(cur).strip()
    if tail:
        out.append(tail)
    return out


def _buffer(annotation: str) -> tuple[tuple[int, ...], str] | None:
    m = re.match(r"^T\.Buffer\((.*)\)$", annotation.strip())
    if not m:
        return None
    parts = split_top(m.group(1))
    if not parts:
        return None
    shape_text = parts[0].strip()
    if not (shape_text.startswith("(") and shape_text.endswith(")")):
        return None
    dims = []
    for dim in split_top(shape_text[1:-1]):
        got = _INT.match(dim.strip())
        if not got:
            return None  # a symbolic dimension: not a static shape
        dims.append(int(got.group(1)))
    dtype = "float32"
    for part in parts[1:]:
        part = part.strip()
        if part.startswith(("'", '"')):
            dtype = part.strip("'\"")
        elif part.startswith("dtype="):
            dtype = part.split("=", 1)[1].strip("'\"")
    return tuple(dims), dtype


def read_signature(func_text: str) -> tuple[str, list[Argument]]:
    """The name and arguments of the PrimFunc printed in ``func_text`` (decorator first)."""
    for line in func_text.split("\n"):
        m = _DEF.search(line.strip())
        if m:
            args = []
            for part in split_top(m.group(2)):
                name, _, annotation = part.partition(":")
                buf = _buffer(annotation)
                args.append(Argument(name.strip(), buf[0] if buf else None, buf[1] if buf else None))
            return m.group(1), args
    raise ValueError("no def line")

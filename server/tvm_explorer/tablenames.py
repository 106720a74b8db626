"""Layer names in a fixed-width column of a text table (costs, numerics, compare).

Converters give every layer of a model the same long scope (``mobilenetv2_1.00_224_1/
mobilenetv2_1.00_224/…``): cut at the right, every row reads the same. So the scope most
rows share is left out once (the table says so above its rows), and a name still too wide
loses its left end, at a ``/`` (or a PyTorch module path's ``.``) where one fits, keeping the
part that tells layers apart (``….layers.0.mlp.down_proj/mm_6``, not ``…/mm_6``).
"""

from __future__ import annotations

import re

ELLIPSIS = "…"
# Where a shortened name may start: a "/" (TF, ONNX scopes; a PyTorch module path's end), or a
# "." of a PyTorch module path (".mlp", ".0.") — not the "." inside "mobilenet_1.00_224".
_BOUNDARY = re.compile(r"/|\.(?=[A-Za-z_]|\d+(?:[./]|$))")


MAX_SHOWN_NAME = 1024
"""Characters of a name shown whole (a graph node's name, a report row): a longer one keeps its
two ends (a hostile model may give a layer a name of megabytes)."""


def shown_name(name: str, limit: int = MAX_SHOWN_NAME) -> str:
    """``name`` in at most ``limit`` characters: a longer one is cut in the middle."""
    return name if len(name) <= limit else _middle(name, limit)


def shared_prefix(names: list[str]) -> str:
    """The longest prefix ending in ``/`` shared by two thirds of the names (two at least),
    never a whole name.

    Names sharing a prefix are neighbours once sorted, so each run of as many names as needed
    is looked at once: time and memory linear in the names' length (counting every prefix of
    every name took memory growing with the square of a name's depth)."""
    distinct = sorted(set(names))
    need = max(2, -(-2 * len(distinct) // 3))
    best = ""
    for i in range(len(distinct) - need + 1):
        first, last = distinct[i], distinct[i + need - 1]
        end = first.rfind("/", 0, _common_length(first, last))
        if end >= 0 and end + 1 == len(first):  # the first name is the prefix itself: not counted
            end = first.rfind("/", 0, end)
        if end + 1 > len(best):
            best = first[: end + 1]
    return best


def _common_length(a: str, b: str) -> int:
    """The length of the longest common prefix of ``a`` and ``b`` (compared in slices)."""
    lo, hi = 0, min(len(a), len(b))
    while lo < hi:  # the common length lies in [lo, hi]
        mid = (lo + hi + 1) // 2
        if a[lo:mid] == b[lo:mid]:
            lo = mid
        else:
            hi = mid - 1
    return lo


def shorten(name: str, width: int, at_scope: bool = True) -> str:
    """``name`` in at most ``width`` characters, its left end dropped (``…/conv_pw_13``);
    ``at_scope``: starting at a ``/`` where the rest fits."""
    if len(name) <= width:
        return name
    if width <= 1:
        return name[-width:] if width > 0 else ""
    tail = name[-(width - 1) :]
    found = _BOUNDARY.search(tail)
    if at_scope and found and found.start() < len(tail) - 1:
        tail = tail[found.start() :]  # start at a scope boundary where the rest still fits
    return ELLIPSIS + tail


def _middle(name: str, width: int) -> str:
    head = (width - 1) // 2
    return name[:head] + ELLIPSIS + name[-(width - 1 - head) :]


class NameColumn:
    """The names of one table column: the shared scope left out, the rest fitted to width."""

    def __init__(self, names, width: int):
        self.names = [n for n in names if n]
        self.width = width
        self.prefix = shared_prefix(self.names) if any(len(n) > width for n in self.names) else ""
        self._shown: dict[tuple, dict[str, set]] = {}  # (width, at_scope) -> shown -> names

    def note(self) -> str | None:
        """The line saying which scope the rows leave out (None when none is)."""
        if not self.prefix:
            return None
        return f"(layer names below leave out their shared scope {self.prefix})"

    def show(self, name: str, width: int | None = None) -> str:
        """``name`` as its row shows it (in ``width`` characters, default the column's)."""
        width = self.width if width is None else width
        short = name[len(self.prefix) :] if self.prefix and name.startswith(self.prefix) else name
        for at_scope in (True, False):
            shown = shorten(short, width, at_scope)
            if shown == short or not self._collides(shown, short, width, at_scope):
                return shown
        return _middle(short, width)

    def _collides(self, shown: str, short: str, width: int, at_scope: bool) -> bool:
        got = self._shown.get((width, at_scope))
        if got is None:
            got = self._shown[(width, at_scope)] = {}
            for other in set(self.names):
                o = other[len(self.prefix) :] if self.prefix and other.startswith(self.prefix) else other
                got.setdefault(shorten(o, width, at_scope), set()).add(o)
        return len(got.get(shown, ())) > 1 or short not in got.get(shown, {short})

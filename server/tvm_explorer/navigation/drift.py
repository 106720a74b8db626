"""Keep ranges honest while an editor holds a changed copy of a bundle document.

The edited copy and the bundle text share a common prefix and a common suffix; everything
between them is the *edited region*. Outside it the characters are identical, so offsets
shift exactly; inside it nothing indexed can be trusted, so nothing maps there. Several edits
collapse into one region spanning all of them: coarser, never wrong.
"""

from __future__ import annotations


def _common_prefix(a: str, b: str) -> int:
    """Length of the longest common prefix (binary search over C-speed slice compares)."""
    lo, hi = 0, min(len(a), len(b))
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if a[:mid] == b[:mid]:
            lo = mid
        else:
            hi = mid - 1
    return lo


def _common_suffix(a: str, b: str, limit: int) -> int:
    """Length of the longest common suffix, at most ``limit``."""
    lo, hi = 0, limit
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if a[len(a) - mid :] == b[len(b) - mid :]:
            lo = mid
        else:
            hi = mid - 1
    return lo


class Drift:
    """The difference between a bundle text (``original``) and an edited copy (``current``)."""

    def __init__(self, original: str, current: str):
        self.clean = original == current
        prefix = _common_prefix(original, current)
        suffix = _common_suffix(original, current, min(len(original), len(current)) - prefix)
        self.start = prefix
        self.original_end = len(original) - suffix
        self.current_end = len(current) - suffix
        self.delta = self.current_end - self.original_end

    def to_original(self, offset: int) -> int | None:
        """The bundle offset of the character at ``offset`` in the edited copy, or None if
        that character is part of the edit."""
        if self.clean or offset < self.start:
            return offset
        if offset >= self.current_end:
            return offset - self.delta
        return None

    def to_current(self, start: int, end: int) -> tuple[int, int] | None:
        """The bundle range ``[start, end)`` in the edited copy, or None if the edit touches
        it (changes its text, or is glued to either end of it: "lv3" becoming "lv3x" is no
        longer the indexed name)."""
        if self.clean or end < self.start:
            return start, end
        if start > self.original_end:
            return start + self.delta, end + self.delta
        return None

    def keeps(self, start: int, end: int) -> bool:
        """True if the bundle range ``[start, end)`` is untouched by the edit."""
        return self.to_current(start, end) is not None

"""The search of ``reduce``: delta debugging (ddmin, Zeller & Hildebrandt) over the operators
of the main graph, tried in parallel waves.

The operators are in graph (topological) order, so ddmin's chunks are contiguous runs of the
graph: whole leading or trailing parts (an op's producers or consumers) go first, in halves,
then quarters, down to single operators. Before that, when the failure names an operator kind,
each operator of that kind alone is tried (one wave; most import failures end there). The
result is 1-minimal — removing any single operator left makes the failure go away — unless the
search was stopped (probe budget, interrupt): ``Result.minimal`` and ``Result.why``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field


class Stopped(Exception):
    """The search must end now (probe budget); the best so far stands."""


@dataclass
class Result:
    kept: list[int]
    minimal: bool
    why: str = ""
    history: list[int] = field(default_factory=list)


def ddmin(
    ops: list[int],
    first_failing: Callable[[list[frozenset]], int | None],
    *,
    hints: Sequence[list[int]] = (),
    on_best: Callable[[list[int]], None] = lambda kept: None,
) -> Result:
    """The smallest failing subset of ``ops`` found. ``first_failing(candidates)`` returns the
    index of the first candidate (a frozenset of ops) that fails the same way, or None."""
    best = list(ops)
    result = Result(best, minimal=False)

    def take(kept) -> None:
        nonlocal best
        best = sorted(kept)
        result.kept = best
        result.history.append(len(best))
        on_best(best)

    try:
        if hints:
            tries = [frozenset(h) for h in hints if 0 < len(h) < len(best)]
            hit = first_failing(tries) if tries else None
            if hit is not None:
                take(tries[hit])
        n = 2
        while len(best) >= 2:
            chunks = _split(best, n)
            subsets = [frozenset(c) for c in chunks] if n > 2 else []
            complements = [frozenset(best) - frozenset(c) for c in chunks]
            candidates = [c for c in subsets + complements if c]
            hit = first_failing(candidates)
            if hit is not None:
                kept = candidates[hit]
                take(kept)
                n = 2 if hit < len(subsets) else max(n - 1, 2)
                continue
            if n >= len(best):
                break  # every single operator is needed: 1-minimal
            n = min(2 * n, len(best))
        result.minimal = True
    except Stopped as stop:
        result.why = str(stop)
    return result


def _split(items: list[int], n: int) -> list[list[int]]:
    size, extra = divmod(len(items), n)
    out, start = [], 0
    for i in range(n):
        end = start + size + (1 if i < extra else 0)
        out.append(items[start:end])
        start = end
    return [c for c in out if c]

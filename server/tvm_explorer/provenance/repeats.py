"""Repeated structure in module paths: the 32 decoder layers of an LLM are 32 paths that differ
only in a layer index (``model.layers.7.mlp.down_proj``); shown as one,
``model.layers.{0..31}.mlp.down_proj``. Pure functions on strings, shared by the CLI tables and
the editor answers.
"""

from __future__ import annotations

from collections.abc import Sequence

TOP_LEVEL = "(top level)"
"""How the module of a layer outside every submodule (the program's own code) is named."""

_Segment = str | frozenset[int]


def module_of(name: str) -> str:
    """The module path of a layer name: PyTorch ``model.layers.0.mlp/linear_3`` →
    ``model.layers.0.mlp``; scoped names (``/model/layers.0/mlp/MatMul``, TFLite
    ``model/dense/MatMul``) → their scopes joined with dots; a name without scope → ``""``."""
    parts = [p for p in name.strip("/").split("/") if p]
    return ".".join(parts[:-1])


def at_depth(path: str, depth: int | None) -> str:
    """``path`` cut to its first ``depth`` dotted parts (all of it for None)."""
    if depth is None or not path:
        return path
    return ".".join(path.split(".")[:depth])


def _index(segment: str) -> int | None:
    return int(segment) if segment.isdigit() and str(int(segment)) == segment else None


def indices_text(values) -> str:
    """``{0..3,5}``: a set of indices, consecutive runs of two or more as ``a..b``."""
    ordered = sorted(set(values))
    runs: list[str] = []
    start = prev = ordered[0]
    for v in [*ordered[1:], None]:
        if v is not None and v == prev + 1:
            prev = v
            continue
        runs.append(str(start) if start == prev else f"{start}..{prev}")
        if v is not None:
            start = prev = v
    return "{" + ",".join(runs) + "}"


def _text(segments: tuple[_Segment, ...]) -> str:
    return ".".join(s if isinstance(s, str) else (str(min(s)) if len(s) == 1 else indices_text(s)) for s in segments)


def group_repeated(paths: Sequence[str]) -> list[tuple[str, list[int]]]:
    """Paths that differ only in layer indices, merged: ``(compressed path, positions in
    paths)``, in the order of each group's first path. A group stands for exactly its paths
    (``a.{0..1}.b.{0..1}`` only when all four exist); equal paths fall in one group."""
    items: list[tuple[tuple[_Segment, ...], list[int]]] = []
    seen: dict[str, int] = {}
    for i, path in enumerate(paths):
        if path in seen:
            items[seen[path]][1].append(i)
            continue
        seen[path] = len(items)
        segs = tuple(frozenset([n]) if (n := _index(s)) is not None else s for s in path.split("."))
        items.append((segs, [i]))
    changed = True
    while changed:
        changed = False
        longest = max((len(segs) for segs, _ in items), default=0)
        for pos in range(longest):
            groups: dict[tuple, int] = {}
            merged: list[tuple[tuple[_Segment, ...], list[int]]] = []
            for segs, members in items:
                if pos >= len(segs) or isinstance(segs[pos], str):
                    merged.append((segs, members))
                    continue
                key = (len(segs), segs[:pos], segs[pos + 1 :])
                at = groups.get(key)
                if at is None:
                    groups[key] = len(merged)
                    merged.append((segs, members))
                    continue
                have, had = merged[at]
                have_at, segs_at = have[pos], segs[pos]
                # both index sets: a str segment was kept apart above, and the key holds the rest
                assert not isinstance(have_at, str) and not isinstance(segs_at, str)
                joined = frozenset(have_at) | frozenset(segs_at)
                merged[at] = ((*have[:pos], joined, *have[pos + 1 :]), had + members)
                changed = True
            items = merged
    items.sort(key=lambda item: min(item[1]))
    return [(_text(segs), sorted(members)) for segs, members in items]


def compress(paths: Sequence[str]) -> list[str]:
    """The compressed forms of ``paths`` (``group_repeated`` without the positions)."""
    return [text for text, _ in group_repeated(paths)]

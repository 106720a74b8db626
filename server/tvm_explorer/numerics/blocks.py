"""Numerical error per repeated block (an LLM's decoder layers, ``model.layers.N``): the error
at each block's output, and the block where it starts growing. Pure: works on a
``numerics.json`` document (``tvm-explorer numerics`` prints it under the per-layer table).
"""

from __future__ import annotations

import math
from typing import TypedDict

from tvm_explorer.bundle.sections.numerics import NumericsDocument, NumericsLayer
from tvm_explorer.provenance.repeats import indices_text, module_of

GROWTH = 2.0
"""A block's output error this many times the error entering it is "growing"."""

FLOOR = 1e-7
"""Errors below this (float32 rounding of values near 1) never count as growth."""


class BlockError(TypedDict):
    """One repeated block: its module, the layers it holds and the error at its output."""

    block: str  # ``model.layers.3``
    layers: int  # its observed layers
    output: str  # the name of the block's last observed layer
    max_abs: float | None  # at the block's output; None: infinite
    worst_abs: float | None  # the largest of its layers; None: infinite
    growth: float | None  # output error / the error entering the block; None: nothing entering


def _blocks_stem(paths: list[str]) -> str | None:
    """The module whose numbered children repeat most (``model.layers`` of
    ``model.layers.N.…``), at least two of them; None when nothing repeats."""
    children: dict[str, set[str]] = {}
    for path in paths:
        parts = path.split(".")
        for i, part in enumerate(parts):
            if part.isdigit():
                children.setdefault(".".join(parts[:i]), set()).add(part)
    best = max(children.items(), key=lambda kv: (len(kv[1]), -len(kv[0])), default=None)
    return best[0] if best and len(best[1]) >= 2 else None


def _abs(entry: NumericsLayer) -> float:
    value = entry.get("max_abs")
    return math.inf if value is None else float(value)


def block_errors(data: NumericsDocument) -> tuple[str, list[BlockError]] | None:
    """``(stem, blocks)``: each repeated block's output error, in model order, with its growth
    over the error entering it (the previous block's output; for the first block, the last
    observed layer before it); None when the model has no repeated blocks."""
    layers = [e for e in data["layers"] if e.get("observed")]
    stem = _blocks_stem([module_of(e["name"]) for e in data["layers"]])
    if stem is None:
        return None
    prefix = f"{stem}." if stem else ""
    order: list[str] = []
    members: dict[str, list[NumericsLayer]] = {}
    before: NumericsLayer | None = None
    for e in layers:
        rest = module_of(e["name"])[len(prefix) :] if module_of(e["name"]).startswith(prefix) else ""
        index = rest.split(".", 1)[0]
        if not index.isdigit():
            if not order:
                before = e
            continue
        block = prefix + index
        if block not in members:
            order.append(block)
            members[block] = []
        members[block].append(e)
    out: list[BlockError] = []
    entering = _abs(before) if before is not None else None
    for block in order:
        found = members[block]
        last = found[-1]
        value = _abs(last)
        worst = max(_abs(e) for e in found)
        growth = None
        if entering is not None and math.isfinite(value):
            growth = value / max(entering, FLOOR) if math.isfinite(entering) else 0.0
        elif entering is not None:
            growth = math.inf
        out.append(
            {
                "block": block,
                "layers": len(found),
                "output": last["name"],
                "max_abs": value if math.isfinite(value) else None,
                "worst_abs": worst if math.isfinite(worst) else None,
                "growth": growth,
            }
        )
        entering = value
    return stem, out


def growing_from(blocks: list[BlockError]) -> BlockError | None:
    """The first block whose output error is ``GROWTH`` times the error entering it (and above
    ``FLOOR``): where the error starts growing; None when no block makes it grow."""
    for b in blocks:
        value = math.inf if b["max_abs"] is None else b["max_abs"]
        if b["growth"] is not None and b["growth"] >= GROWTH and value > FLOOR:
            return b
    return None


def report(data: NumericsDocument) -> list[str]:
    """The per-block lines of ``tvm-explorer numerics`` (none without repeated blocks)."""
    found = block_errors(data)
    if found is None or not found[1]:
        return []
    stem, blocks = found
    indices = [int(b["block"].rsplit(".", 1)[1]) for b in blocks]
    name = f"{stem}.{indices_text(indices)}" if stem else indices_text(indices)

    def num(x: float | None) -> str:
        return "inf" if x is None else f"{x:.3g}"

    lines = ["", f"Per repeated block ({name}): max abs error at each block's output"]
    lines.append(f"  {'block':32} {'observed':>8} {'at output':>10} {'worst':>10} {'growth':>8}")
    for b in blocks:
        growth = "-" if b["growth"] is None else ("inf" if math.isinf(b["growth"]) else f"×{b['growth']:.3g}")
        lines.append(
            f"  {b['block'][:32]:32} {b['layers']:>8} {num(b['max_abs']):>10} {num(b['worst_abs']):>10} {growth:>8}"
        )
    first = growing_from(blocks)
    if first is None:
        lines.append(
            f"The error does not grow across the blocks (no block's output error reaches ×{GROWTH:g} its input's)."
        )
    else:
        lines.append(
            f"The error starts growing at {first['block']}: its output error ({num(first['max_abs'])}) is "
            f"×{first['growth']:.3g} the error entering it."
            if first["growth"] is not None and math.isfinite(first["growth"])
            else f"The error starts growing at {first['block']}: its output is not finite."
        )
    return lines

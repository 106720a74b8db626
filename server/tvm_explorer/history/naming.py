"""Which layers a user means by ``LAYER`` on the command line: an op number (``2``), a
subgraph and op (``1:2``), a layer's name or output tensor (or an unambiguous part of one), or
several of these joined by commas (a fused group: ``0,1,2``)."""

from __future__ import annotations

import re

from tvm_explorer.bundle.reader import Bundle
from tvm_explorer.bundle.types import Layer
from tvm_explorer.errors import ExplorerError

_OP = re.compile(r"(?:(\d+):)?(\d+)")
_SHOWN = 6


def resolve_layers(bundle: Bundle, spec: str) -> list[int]:
    """The layer ids ``spec`` names, in the order given (ExplorerError naming the part that
    names none, or several)."""
    parts = [p.strip() for p in spec.split(",")]
    if not spec.strip() or not all(parts):
        raise ExplorerError(f"{spec!r}: name a layer (an op number such as 2, SUBGRAPH:OP, or a layer name)")
    out: list[int] = []
    for part in parts:
        lid = _one(bundle, part)
        if lid not in out:
            out.append(lid)
    return out


def _one(bundle: Bundle, part: str) -> int:
    number = _OP.fullmatch(part)
    if number:
        subgraph, op = int(number.group(1) or 0), int(number.group(2))
        layer = bundle.layer(subgraph, op)
        if layer is None:
            count = sum(1 for lay in bundle.layers if lay.subgraph == subgraph)
            raise ExplorerError(
                f"{part}: no op {op} in subgraph {subgraph} of {bundle.root} (it has {count} ops: 0..{count - 1})"
            )
        return layer.id
    exact = [lay for lay in bundle.layers if part == lay.name or part in lay.outputs]
    if len(exact) == 1:
        return exact[0].id
    found = exact or [lay for lay in bundle.layers if part in lay.name or any(part in o for o in lay.outputs)]
    if len(found) == 1:
        return found[0].id
    if not found:
        raise ExplorerError(f"{part!r}: no layer of {bundle.root} has that name, output or op number")
    shown = ", ".join(_label(lay) for lay in found[:_SHOWN]) + (", …" if len(found) > _SHOWN else "")
    raise ExplorerError(f"{part!r} names {len(found)} layers ({shown}): give its op number or a longer name")


def _label(layer: Layer) -> str:
    where = f"{layer.subgraph}:{layer.op_index}" if layer.subgraph else str(layer.op_index)
    return f"op {where} {layer.opcode} {layer.name}".rstrip()

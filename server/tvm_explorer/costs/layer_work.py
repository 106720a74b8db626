"""How a kernel's work divides among the layers it serves, read from its final TIR.

Every store of the final TIR carries its origin set (the layers it computes for). A store's
work is the number of times it runs (the product of the constant extents of the loops around
it) times the arithmetic in its value, plus one; a store of several layers divides its work
evenly among them. The shares are what a shared kernel's measured time is split by.
"""

from __future__ import annotations

from tvm import tirx

from tvm_explorer.capture.node_collect import collect
from tvm_explorer.provenance.spans import read_span

_ARITH = tuple(
    getattr(tirx, n)
    for n in ("Add", "Sub", "Mul", "Div", "FloorDiv", "FloorMod", "Mod", "Max", "Min", "Call")
    if hasattr(tirx, n)
)


def _extent(loop) -> int:
    try:
        return max(int(loop.extent), 1)
    except (TypeError, ValueError):
        return 1  # symbolic extent: counted once


def _children(node) -> list:
    if isinstance(node, tirx.SeqStmt):
        return list(node.seq)
    if isinstance(node, tirx.IfThenElse):
        return [node.then_case] + ([node.else_case] if node.else_case is not None else [])
    body = getattr(node, "body", None)
    return [body] if body is not None else []


def kernel_work(final_tir, layers_of_set) -> dict[str, dict[int, float]]:
    """PrimFunc name -> layer id -> work units. ``layers_of_set(set_id)`` gives the layer
    ids of an origin set."""
    out: dict[str, dict[int, float]] = {}
    for gv, func in final_tir.functions.items():
        if not isinstance(func, tirx.PrimFunc):
            continue
        work: dict[int, float] = {}
        todo = [(func.body, 1)]
        while todo:
            node, times = todo.pop()
            if node is None:
                continue
            if isinstance(node, tirx.BufferStore):
                got = read_span(node)
                layers = layers_of_set(got[0]) if got else ()
                if layers:
                    units = times * (1 + len(collect(node.value, _ARITH)))
                    for lid in layers:
                        work[lid] = work.get(lid, 0.0) + units / len(layers)
                continue
            inner = times * _extent(node) if isinstance(node, tirx.For) else times
            todo.extend((child, inner) for child in _children(node))
        # A CUDA kernel (``<PrimFunc>_kernel``) does its PrimFunc's work.
        name = gv.name_hint[: -len("_kernel")] if gv.name_hint.endswith("_kernel") else gv.name_hint
        merged = out.setdefault(name, {})
        for lid, layer_units in work.items():
            merged[lid] = merged.get(lid, 0.0) + layer_units
    return out

"""Collect the nodes of given types under a TVM object, with less Python overhead per call.

``tvm_ffi.structural_walk`` normalizes its callback table in Python on every call, which
costs more than the walk itself for the small subtrees the tracker visits thousands of times
per compile. ``collect`` resolves the type indices once and calls the same FFI walk directly
(falling back to ``structural_walk`` if that entry point is missing): same nodes, same order.
"""

from __future__ import annotations

import tvm_ffi
from tvm_ffi import structural as _structural

_WALK = getattr(getattr(_structural, "_ffi_api", None), "StructuralWalk", None)
_ORDERS = {"pre": int(_structural.WalkOrder.PREORDER), "post": int(_structural.WalkOrder.POSTORDER)}
_INDICES: dict[tuple, tuple[int, ...]] = {}


def _indices(types: tuple) -> tuple[int, ...]:
    got = _INDICES.get(types)
    if got is None:
        got = tuple(_structural._callback_type_to_type_index(t, api_name="structural_walk") for t in types)
        _INDICES[types] = got
    return got


def walk(root, types: tuple, fn, order: str = "post") -> None:
    """Call ``fn(node)`` for every node of one of ``types`` under ``root`` (like
    ``structural_walk(root, [(types, fn)], order=order)``)."""
    if _WALK is None:
        tvm_ffi.structural_walk(root, [(types, fn)], order=order)
        return
    _WALK(root, [(i, fn) for i in _indices(types)], [], _ORDERS[order])


def collect(root, types: tuple, order: str = "post") -> list:
    """Every node of one of ``types`` under ``root``, in walk order."""
    found: list = []
    walk(root, types, found.append, order)
    return found

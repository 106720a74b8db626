"""Provenance carried inside TVM IR as spans.

A span we stamp has source name ``tvmx``; its line is an origin-set id and its column a unit
id (the id of a TIR store, stable across passes). TVM never prints spans, so stamping them
changes neither the printed IR nor what is computed.
"""

from __future__ import annotations

from typing import Any

import tvm

SOURCE_NAME = "tvmx"
_SOURCE = tvm.ir.SourceName(SOURCE_NAME)


def handle(obj) -> int:
    """Identity of a TVM object (its C handle), usable as a dict key."""
    return obj.__chandle__()


def origin_span(origin_set: int, unit: int = 0) -> tvm.ir.Span:
    """A span carrying an origin set id and a unit id (spans are immutable: one object per
    origin set serves every binding stamped with it)."""
    if unit == 0:
        span = _SET_SPANS.get(origin_set)
        if span is None:
            span = _SET_SPANS[origin_set] = tvm.ir.Span(_SOURCE, origin_set, origin_set, 0, 0)
        return span
    return tvm.ir.Span(_SOURCE, origin_set, origin_set, unit, unit)  # (line, end_line, col, end_col)


_SET_SPANS: dict[int, tvm.ir.Span] = {}


def read_span(node) -> tuple[int, int] | None:
    """``(origin_set, unit)`` if ``node`` carries a span we stamped, else None."""
    span = getattr(node, "span", None)
    if span is None or span.source_name is None or span.source_name.name != SOURCE_NAME:
        return None
    return span.line, span.column


def set_span(node, span: tvm.ir.Span) -> None:
    """Stamp ``span`` on ``node`` in place.

    IR nodes are frozen; TVM's force-setter is safe here because we only stamp nodes that a
    pass just created (or that we created), and a span never changes what TVM computes.
    """
    prop = _SPAN_FIELDS.get(type(node))
    if prop is None:
        for cls in type(node).__mro__:
            prop = cls.__dict__.get("span")
            if prop is not None and hasattr(prop, "set"):
                _SPAN_FIELDS[type(node)] = prop
                break
        else:
            raise TypeError(f"{type(node).__name__} has no span field")
    prop.set(node, span)


_SPAN_FIELDS: dict[type, Any] = {}  # node type -> its settable ``span`` field (a TVM FFI property)

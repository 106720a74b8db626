"""Checks of single values of a bundle's JSON sections (``costs.json``, ``numerics.json``,
``bisect.json``), run once where a section loads.

JSON allows what no reader can format: ``10**400`` (``float()`` overflows), ``NaN`` and
``Infinity`` (Python's ``json`` reads them), ``1e308`` times that sum to infinity, a string
where a number belongs. Each check raises ``error`` with a message naming the field (never
the value: an integer of thousands of digits cannot even be printed).
"""

from __future__ import annotations

import math
import sys
from collections.abc import Iterator

MAX_INT = 2**53
"""Largest integer a count, index or byte size may be (what a JSON double holds exactly)."""
MAX_MEASURE = 1e15
"""Largest time (ms), share, FLOP count or size a cost may be: far above any measurement."""
MAX_FLOAT = sys.float_info.max
"""Largest error a numerics figure may be: any finite double (an error of a float64 model can
be that large); only integers beyond it (``10**400``: ``float()`` overflows) are refused."""


def number(
    value, where: str, error=ValueError, *, nullable: bool = True, low: float = 0.0, high: float = MAX_MEASURE
) -> None:
    """A finite number within ``low..high`` (or null when ``nullable``)."""
    if value is None:
        if nullable:
            return
        raise error(f"{where} must be a number")
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise error(f"{where} must be a number{' or null' if nullable else ''}")
    if isinstance(value, float) and not math.isfinite(value):
        raise error(f"{where} must be a finite number (NaN and infinity are not)")
    if not low <= value <= high:  # exact for huge ints: no float() conversion
        raise error(f"{where} must be between {low:g} and {high:g}")


def integer(value, where: str, error=ValueError, *, nullable: bool = False, low: int = 0, high: int = MAX_INT) -> None:
    """An integer within ``low..high`` (or null when ``nullable``)."""
    if value is None and nullable:
        return
    if isinstance(value, bool) or not isinstance(value, int):
        raise error(f"{where} must be an integer{' or null' if nullable else ''}")
    if not low <= value <= high:
        raise error(f"{where} must be between {low} and {high}")


def string(value, where: str, error=ValueError, *, nullable: bool = False) -> None:
    """A string (or null when ``nullable``)."""
    if value is None and nullable:
        return
    if not isinstance(value, str):
        raise error(f"{where} must be a string{' or null' if nullable else ''}")


def strings(value, where: str, error=ValueError) -> None:
    """A list of strings."""
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise error(f"{where} must be a list of strings")


def boolean(value, where: str, error=ValueError) -> None:
    """true or false."""
    if not isinstance(value, bool):
        raise error(f"{where} must be true or false")


def obj(value, where: str, error=ValueError) -> dict:
    """A JSON object; returned."""
    if not isinstance(value, dict):
        raise error(f"{where} must be an object")
    return value


def objects(value, where: str, item: str, error=ValueError) -> Iterator[tuple[int, dict]]:
    """A list of JSON objects: ``(index, object)`` for each, checked as it is reached (a
    caller's checks of one come before the next is looked at); ``item`` names one (``kernel 3``)."""
    if not isinstance(value, list):
        raise error(f"{where} must be a list")
    for i, v in enumerate(value):
        yield i, obj(v, f"{item} {i}", error)


def document(data, schema_version: int, error=ValueError) -> dict:
    """A section's JSON document: an object of the schema version this tvm-explorer reads."""
    if not isinstance(data, dict):
        raise error("not a JSON object")
    if data.get("schema_version") != schema_version:
        raise error(
            f"schema version {data.get('schema_version')!r} is not supported "
            f"(this tvm-explorer reads version {schema_version})"
        )
    return data


def entry(value, what: str, i: int, error=ValueError) -> str:
    """Entry ``i`` of a section's list of ``what``: an object whose ``id`` is ``i``; returns
    how messages name it (``storage entry 3``)."""
    where = f"{what} entry {i}"
    obj(value, where, error)
    integer(value.get("id"), f"{where}: 'id'", error)
    if value["id"] != i:
        raise error(f"{where}: 'id' must be {i}")
    return where

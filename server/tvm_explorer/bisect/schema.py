"""``bisect.json`` (``tvm-explorer bisect -o BUNDLE``): validation on load and what the editor
reads from it. No TVM here."""

from __future__ import annotations

BISECT_FILE = "bisect.json"


class BisectError(ValueError):
    """``bisect.json`` does not have the documented shape."""


def _num(value, where: str) -> None:
    if value is not None and (isinstance(value, bool) or not isinstance(value, (int, float))):
        raise BisectError(f"{where} must be a number or null")


def validate(data) -> dict:
    """Check the documented shape (docs/bundle-format.md); returns ``data``."""
    if not isinstance(data, dict) or data.get("schema_version") != 1:
        raise BisectError("must be an object with schema_version 1")
    culprit = data.get("culprit")
    if culprit is not None:
        if not (isinstance(culprit, dict) and isinstance(culprit.get("name"), str)
                and culprit.get("stage") in ("relax", "tir")
                and (culprit.get("index") is None or isinstance(culprit.get("index"), int))):
            raise BisectError("'culprit' must be {index, name, stage} or null")
    _num(data.get("error_before"), "'error_before'")
    _num(data.get("error_after"), "'error_after'")
    _num(data.get("error_final"), "'error_final'")
    for key in ("snapshots", "layers"):
        if not isinstance(data.get(key, []), list):
            raise BisectError(f"'{key}' must be a list")
    for i, row in enumerate(data.get("layers", [])):
        if not (isinstance(row, dict) and isinstance(row.get("subgraph"), int)
                and isinstance(row.get("op_index"), int)):
            raise BisectError(f"layer entry {i} must name subgraph and op_index")
        _num(row.get("before"), f"layer entry {i}: 'before'")
        _num(row.get("after"), f"layer entry {i}: 'after'")
    diff = data.get("diff")
    if diff is not None and not (isinstance(diff, dict) and all(
            v is None or isinstance(v, str) for v in diff.values())):
        raise BisectError("'diff' must be {before, after} or null")
    return data


def culprit_documents(data: dict | None) -> set[str]:
    """The two documents of the culprit pass's diff."""
    diff = (data or {}).get("diff") or {}
    return {p for p in (diff.get("before"), diff.get("after")) if p}


def layer_change(data: dict, subgraph: int, op_index: int) -> dict | None:
    """The layer's error before and after the culprit, if recorded."""
    for row in data.get("layers", ()):
        if row["subgraph"] == subgraph and row["op_index"] == op_index:
            return row
    return None

"""``bisect.json`` (``tvm-explorer bisect -o BUNDLE``): validation on load and what the editor
reads from it. No TVM here."""

from __future__ import annotations

from typing import Literal, TypedDict, cast

from tvm_explorer.bundle import fields as f
from tvm_explorer.bundle.sections import Section
from tvm_explorer.bundle.sections.numerics import LayerPosition

BISECT_FILE = "bisect.json"


class BisectError(ValueError):
    """``bisect.json`` does not have the documented shape."""


# -- the validated shape ---------------------------------------------------------------------
# What ``validate`` accepts, no more: a key it allows to be null may also be missing (``total=False``
# parts), a value it does not check is ``object``. The documents stay plain dicts at run time.


class _CulpritRequired(TypedDict):
    stage: Literal["relax", "tir"]
    name: str


class BisectCulprit(_CulpritRequired, total=False):
    """``culprit``: the pass after which the results change."""

    index: int | None


class _ChangeRequired(TypedDict):
    subgraph: int
    op_index: int


class BisectLayer(_ChangeRequired, total=False):
    """One entry of ``layers``: the layer's max abs error before and after the culprit
    (``null``: not observed, or infinite)."""

    before: float | None
    after: float | None


class _BisectRequired(TypedDict):
    schema_version: int  # 1


class BisectDocument(_BisectRequired, total=False):
    """A validated ``bisect.json``."""

    model: str | None
    target: str | None
    pipeline: str | None
    baseline: str | None
    note: str | None
    culprit: BisectCulprit | None
    error_before: float | None
    error_after: float | None
    error_final: float | None
    tir_builds: int | None
    snapshots: list[object]  # entries not validated: the editor does not read them
    layers: list[BisectLayer]
    first_divergence: LayerPosition | None
    diff: dict[str, str | None] | None  # {"before", "after"}: document paths of the culprit pass


def _num(value, where: str) -> None:
    f.number(value, where, BisectError, high=f.MAX_FLOAT)  # a max abs error, null: infinite


def validate(data: object) -> BisectDocument:
    """Check the documented shape (docs/bundle-format.md), the type and range of every value
    the editor shows; returns ``data``."""
    if not isinstance(data, dict) or data.get("schema_version") != 1:
        raise BisectError("must be an object with schema_version 1")
    for key in ("model", "target", "pipeline", "baseline", "note"):
        f.string(data.get(key), f"'{key}'", BisectError, nullable=True)
    culprit = data.get("culprit")
    if culprit is not None:
        if not (isinstance(culprit, dict) and culprit.get("stage") in ("relax", "tir")):
            raise BisectError("'culprit' must be {index, name, stage} or null")
        f.string(culprit.get("name"), "'culprit': 'name'", BisectError)
        f.integer(culprit.get("index"), "'culprit': 'index'", BisectError, nullable=True)
    _num(data.get("error_before"), "'error_before'")
    _num(data.get("error_after"), "'error_after'")
    _num(data.get("error_final"), "'error_final'")
    f.integer(data.get("tir_builds"), "'tir_builds'", BisectError, nullable=True)
    for key in ("snapshots", "layers"):
        if not isinstance(data.get(key, []), list):
            raise BisectError(f"'{key}' must be a list")
    for i, row in enumerate(data.get("layers", [])):
        f.obj(row, f"layer entry {i}", BisectError)
        for key in ("subgraph", "op_index"):
            f.integer(row.get(key), f"layer entry {i}: '{key}'", BisectError)
        _num(row.get("before"), f"layer entry {i}: 'before'")
        _num(row.get("after"), f"layer entry {i}: 'after'")
    first = data.get("first_divergence")
    if first is not None:
        f.obj(first, "'first_divergence'", BisectError)
        for key in ("subgraph", "op_index"):
            f.integer(first.get(key), f"'first_divergence': '{key}'", BisectError)
    diff = data.get("diff")
    if diff is not None and not (
        isinstance(diff, dict) and all(v is None or isinstance(v, str) for v in diff.values())
    ):
        raise BisectError("'diff' must be {before, after} or null")
    return cast(BisectDocument, data)


def culprit_documents(data: BisectDocument | None) -> set[str]:
    """The two documents of the culprit pass's diff."""
    diff = (data.get("diff") if data else None) or {}
    return {p for p in (diff.get("before"), diff.get("after")) if p}


def layer_change(data: BisectDocument, subgraph: int, op_index: int) -> BisectLayer | None:
    """The layer's error before and after the culprit, if recorded."""
    for row in data.get("layers", ()):
        if row["subgraph"] == subgraph and row["op_index"] == op_index:
            return row
    return None


SECTION = Section(BISECT_FILE, "bisect report", lambda data, _layers: validate(data), at_load=True)

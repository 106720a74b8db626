"""``numerics.json``: its shape (docs/bundle-format.md), validation on load, and reading it.

No TVM here: the language server and ``tvm-explorer numerics`` read it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Literal, TypedDict, cast

from tvm_explorer.bundle import fields as f

NUMERICS_FILE = "numerics.json"
SCHEMA_VERSION = 1
MODES = ("fused", "unfused")
METRICS = ("max_abs", "max_rel", "cosine", "steps")
COSINE_LIMIT = 1.001  # a cosine similarity is within -1..1 (rounding aside)


class NumericsError(ValueError):
    """``numerics.json`` does not have the documented shape (the message says where)."""


# -- the validated shape ---------------------------------------------------------------------
# What ``validate`` accepts, no more: a key it allows to be null may also be missing (``total=False``
# parts), a value it does not check is ``object``. The documents stay plain dicts at run time.

Mode = Literal["fused", "unfused"]


class LayerPosition(TypedDict):
    """``{"subgraph": int, "op_index": int}``: a layer named by its place in the model."""

    subgraph: int
    op_index: int


class _FiguresRequired(TypedDict):
    observed: bool
    diverges: bool


class NumericsFigures(_FiguresRequired, total=False):
    """The error figures of one layer in one build (``null`` max_abs, max_rel, steps:
    infinite; ``cosine`` is a number whenever ``observed``)."""

    max_abs: float | None
    max_rel: float | None
    cosine: float | None
    steps: float | None
    kernel: str | None
    hidden_in: str | None
    note: str | None
    step_budget: object  # not validated (a quantized layer's: a number)


class _LayerRequired(NumericsFigures):
    subgraph: int
    op_index: int
    opcode: str
    name: str


class NumericsLayer(_LayerRequired, total=False):
    """One entry of ``layers``: its figures, and in ``"mode": "unfused"`` the fused build's."""

    observed_by: Mode | None
    fused: NumericsFigures


class _NumericsRequired(TypedDict):
    schema_version: int  # SCHEMA_VERSION
    reference: str
    mode: Mode
    layers: list[NumericsLayer]


class NumericsDocument(_NumericsRequired, total=False):
    """A validated ``numerics.json``."""

    model: str | None
    target: str | None
    inputs: str | None
    first_divergence: LayerPosition | None
    fused_first_divergence: LayerPosition | None
    c_fixes: list[str]
    """The ``#define`` lines TVM's C was compiled with (target ``c``; absent when none)."""


def _position(value, where: str) -> None:
    if value is None:
        return
    if not isinstance(value, dict):
        raise NumericsError(f'{where} must be {{"subgraph": int, "op_index": int}} or null')
    for key in ("subgraph", "op_index"):
        f.integer(value.get(key), f"{where}: '{key}'", NumericsError)


def _figures(entry: dict, where: str) -> None:
    f.boolean(entry.get("observed"), f"{where}: 'observed'", NumericsError)
    for key in ("max_abs", "max_rel", "steps"):  # null: infinite (JSON has no infinity)
        f.number(entry.get(key), f"{where}: '{key}'", NumericsError, high=f.MAX_FLOAT)
    # An observed layer has a cosine (the reports print it); null only when not observed.
    f.number(
        entry.get("cosine"),
        f"{where}: 'cosine'",
        NumericsError,
        nullable=not entry["observed"],
        low=-COSINE_LIMIT,
        high=COSINE_LIMIT,
    )
    f.boolean(entry.get("diverges"), f"{where}: 'diverges'", NumericsError)
    for key in ("kernel", "hidden_in", "note"):
        f.string(entry.get(key), f"{where}: '{key}'", NumericsError, nullable=True)


def validate(data: object, layer_keys: set[tuple[int, int]] | None = None) -> NumericsDocument:
    """Check ``data`` against the documented shape; returns it. ``layer_keys``: the bundle's
    ``(subgraph, op_index)`` pairs, which every entry must name."""
    if not isinstance(data, dict):
        raise NumericsError("must be a JSON object")
    if data.get("schema_version") != SCHEMA_VERSION:
        raise NumericsError(f"unknown schema_version {data.get('schema_version')!r}")
    f.string(data.get("reference"), "'reference'", NumericsError)
    for key in ("model", "target", "inputs", "ran_on"):
        f.string(data.get(key), f"'{key}'", NumericsError, nullable=True)
    if data.get("mode") not in MODES:
        raise NumericsError(f"'mode' must be one of {', '.join(MODES)}")
    layers = data.get("layers")
    if not isinstance(layers, list):
        raise NumericsError("'layers' must be a list")
    for i, entry in enumerate(layers):
        where = f"layer entry {i}"
        if not isinstance(entry, dict):
            raise NumericsError(f"{where} must be an object")
        for key in ("subgraph", "op_index"):
            f.integer(entry.get(key), f"{where}: '{key}'", NumericsError)
        if layer_keys is not None and (entry["subgraph"], entry["op_index"]) not in layer_keys:
            raise NumericsError(
                f"{where} names op {entry['op_index']} of subgraph {entry['subgraph']}, which the model does not have"
            )
        for key in ("opcode", "name"):
            if not isinstance(entry.get(key), str):
                raise NumericsError(f"{where}: '{key}' must be a string")
        if entry.get("observed_by") not in (None, *MODES):
            raise NumericsError(f"{where}: 'observed_by' must be fused, unfused or null")
        _figures(entry, where)
        if "fused" in entry:
            if not isinstance(entry["fused"], dict):
                raise NumericsError(f"{where}: 'fused' must be an object")
            _figures(entry["fused"], f"{where} (fused)")
    if "c_fixes" in data:
        f.strings(data["c_fixes"], "'c_fixes'", NumericsError)
    listed = {(e["subgraph"], e["op_index"]) for e in layers}
    for key in ("first_divergence", "fused_first_divergence"):
        _position(data.get(key), f"'{key}'")
        first = data.get(key)
        if first is not None and (first["subgraph"], first["op_index"]) not in listed:
            raise NumericsError(f"'{key}' names a layer that has no entry")
    return cast(NumericsDocument, data)


def unit(data: NumericsDocument) -> str:
    """What a layer is called in the model document: ``op`` (a TFLite operator) or ``node``
    (an ONNX or PyTorch graph node)."""
    model = str(data.get("model", "")).lower()
    return "node" if model.endswith((".onnx", ".pt2")) else "op"


def layer_entry(data: NumericsDocument, subgraph: int, op_index: int) -> NumericsLayer | None:
    """The entry of one layer in a validated ``numerics.json``."""
    for entry in data.get("layers", ()):
        if entry["subgraph"] == subgraph and entry["op_index"] == op_index:
            return entry
    return None


def format_error(entry: NumericsFigures, quote: Callable[[str], str] = str) -> str:
    """One line: ``max abs 1.2e-05 (rel 3e-06), cosine 1.000000, 0 steps — matches``.
    ``quote``: what the entry's own strings (kernel, note) go through (Markdown: ``text``)."""
    hidden_in, note = entry.get("hidden_in"), entry.get("note")
    if not entry.get("observed"):
        if hidden_in:
            return f"not observed (hidden inside kernel {quote(hidden_in)})"
        return f"not observed ({quote(note)})" if note else "not observed"

    def num(x):  # null: infinite (JSON has no infinity)
        return "inf" if x is None else f"{x:.3g}"

    parts = [f"max abs {num(entry['max_abs'])} (rel {num(entry['max_rel'])})", f"cosine {entry['cosine']:.6f}"]
    if entry.get("steps") is not None:
        budget = entry.get("step_budget")
        parts.append(f"{entry['steps']:g} steps" + (f" (budget {budget:g})" if budget else ""))
    verdict = "DIVERGES" if entry["diverges"] else "matches"
    why = f" ({quote(note)})" if note else ""
    return ", ".join(parts) + f" — {verdict}{why}"

"""``numerics.json``: its shape (docs/bundle-format.md), validation on load, and reading it.

No TVM here: the language server and ``tvm-explorer numerics`` read it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Literal, TypedDict, cast

from tvm_explorer.bundle import fields as f
from tvm_explorer.bundle.sections import Section

NUMERICS_FILE = "numerics.json"
SCHEMA_VERSION = 1
MODES = ("fused", "unfused")
METRICS = ("max_abs", "max_rel", "cosine", "steps")
COSINE_LIMIT = 1.001  # a cosine similarity is within -1..1 (rounding aside)
FLOAT_REL_TOLERANCE = 1e-3  # the float budget of bundles that predate recorded budgets


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


class Spread(TypedDict):
    """How far the reference's own engines are apart on a layer's output (``null`` steps:
    not a quantized integer tensor; ``null`` max_abs: infinite)."""

    steps: float | None
    max_abs: float | None
    cosine: float


class NumericsFigures(_FiguresRequired, total=False):
    """The error figures of one layer in one build (``null`` max_abs, max_rel, steps:
    infinite; ``cosine`` is a number whenever ``observed``), and what it was allowed: each
    budget ``null`` where that measure was not judged, ``judged`` false where none was."""

    max_abs: float | None
    max_rel: float | None
    cosine: float | None
    steps: float | None
    kernel: str | None
    hidden_in: str | None
    note: str | None
    folded: bool
    judged: bool
    step_budget: float | None
    cosine_min: float | None
    abs_budget: float | None
    budget_ratio: float | None
    spread: Spread | None


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
    ran_on: str | None  # the remote device the model ran on (the reference ran here)
    spread_engines: str | None
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
    for key in ("folded", "judged"):  # absent in bundles written before they were recorded
        if key in entry:
            f.boolean(entry[key], f"{where}: '{key}'", NumericsError)
    for key in ("step_budget", "abs_budget", "budget_ratio"):
        f.number(entry.get(key), f"{where}: '{key}'", NumericsError, low=0.0, high=f.MAX_FLOAT)
    f.number(entry.get("cosine_min"), f"{where}: 'cosine_min'", NumericsError, low=-COSINE_LIMIT, high=COSINE_LIMIT)
    spread = entry.get("spread")
    if spread is not None:
        if not isinstance(spread, dict):
            raise NumericsError(f"{where}: 'spread' must be an object or null")
        for key in ("steps", "max_abs"):
            f.number(spread.get(key), f"{where}: 'spread.{key}'", NumericsError, low=0.0, high=f.MAX_FLOAT)
        f.number(
            spread.get("cosine"),
            f"{where}: 'spread.cosine'",
            NumericsError,
            nullable=False,
            low=-COSINE_LIMIT,
            high=COSINE_LIMIT,
        )


def validate(data: object, layer_keys: set[tuple[int, int]] | None = None) -> NumericsDocument:
    """Check ``data`` against the documented shape; returns it. ``layer_keys``: the bundle's
    ``(subgraph, op_index)`` pairs, which every entry must name."""
    if not isinstance(data, dict):
        raise NumericsError("must be a JSON object")
    if data.get("schema_version") != SCHEMA_VERSION:
        raise NumericsError(f"unknown schema_version {data.get('schema_version')!r}")
    f.string(data.get("reference"), "'reference'", NumericsError)
    for key in ("model", "target", "inputs", "ran_on", "spread_engines"):
        f.string(data.get(key), f"'{key}'", NumericsError, nullable=True)
    thresholds = data.get("thresholds")
    if thresholds is not None:  # what the reports print where the budgets come from
        if not isinstance(thresholds, dict):
            raise NumericsError("'thresholds' must be an object")
        for key, value in thresholds.items():
            f.number(value, f"'thresholds.{key}'", NumericsError, nullable=False, high=f.MAX_FLOAT)
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


def unit(data: Mapping[str, object]) -> str:
    """What a layer is called in the model document: ``op`` (a TFLite operator) or ``node``
    (an ONNX or PyTorch graph node). ``data``: any document with the model's file name under
    ``model`` (``numerics.json``, ``bisect.json``)."""
    model = str(data.get("model", "")).lower()
    return "node" if model.endswith((".onnx", ".pt2")) else "op"


def layer_entry(data: NumericsDocument, subgraph: int, op_index: int) -> NumericsLayer | None:
    """The entry of one layer in a validated ``numerics.json``."""
    for entry in data.get("layers", ()):
        if entry["subgraph"] == subgraph and entry["op_index"] == op_index:
            return entry
    return None


def format_error(entry: NumericsFigures, quote: Callable[[str], str] = str) -> str:
    """One line: the error against the reference, each measure with what it was allowed, the
    reference's own spread where measured, and the verdict: ``max abs 0.047 (rel 0.0084),
    cosine 0.999996 (≥ 0.9999), 2 steps (budget 4) · reference's own spread 2 steps, cosine
    0.999996 — matches``. ``quote``: what the entry's own strings (kernel, note) go through
    (Markdown: ``text``)."""
    hidden_in, note = entry.get("hidden_in"), entry.get("note")
    if not entry.get("observed"):
        if hidden_in:
            return f"not observed (hidden inside kernel {quote(hidden_in)})"
        return f"not observed ({quote(note)})" if note else "not observed"

    def num(x):  # null: infinite (JSON has no infinity)
        return "inf" if x is None else f"{x:.3g}"

    judged = entry.get("judged", True)
    budgets = "cosine_min" in entry or "abs_budget" in entry  # recorded since budgets have their own fields
    abs_budget, cosine_min, step_budget = entry.get("abs_budget"), entry.get("cosine_min"), entry.get("step_budget")
    parts = [
        f"max abs {num(entry['max_abs'])} (rel {num(entry['max_rel'])})"
        + (f" (budget {abs_budget:.3g})" if abs_budget is not None and entry.get("steps") is None else ""),
        f"cosine {entry['cosine']:.6f}"
        + (f" (≥ {cosine_min:.6g})" if cosine_min is not None else " (not judged)" if budgets else ""),
    ]
    if entry.get("steps") is not None:
        shown = f" (budget {step_budget:g})" if step_budget else " (not judged)" if budgets else ""
        parts.append(f"{entry['steps']:g} steps{shown}")
    spread = entry.get("spread")
    text = ", ".join(parts)
    if spread:
        measure = (
            f"{spread['steps']:g} steps" if spread.get("steps") is not None else f"max abs {num(spread['max_abs'])}"
        )
        text += f" · reference's own spread {measure}, cosine {spread['cosine']:.6f}"
    verdict = "DIVERGES" if entry["diverges"] else "matches" if judged else "not judged"
    why = f" ({quote(note)})" if note else ""
    return f"{text} — {verdict}{why}"


def is_folded(entry: NumericsFigures) -> bool:
    """A layer the compiler computed at compile time (all its inputs constants) and that was
    therefore not observed: not a compute layer."""
    return bool(entry.get("folded")) and not entry.get("observed")


def headline(data: NumericsDocument) -> str:
    """``53/65 layers observed (102 more folded into constants: 102 DEQUANTIZE); 3 not judged``:
    compute layers only, the folded ones counted apart."""
    layers = data["layers"]
    folded = [e for e in layers if is_folded(e)]
    compute = [e for e in layers if not is_folded(e)]
    observed = [e for e in compute if e["observed"]]
    text = f"{len(observed)}/{len(compute)} layers observed"
    if folded:
        kinds: dict[str, int] = {}
        for e in folded:
            kinds[e["opcode"]] = kinds.get(e["opcode"], 0) + 1
        which = ", ".join(f"{n} {op}" for op, n in sorted(kinds.items(), key=lambda kv: -kv[1])[:3])
        text += (
            f" ({len(folded)} more folded into constants at compile time, not counted: {which}"
            f"{', …' if len(kinds) > 3 else ''})"
        )
    return text


def budget_lines(data: NumericsDocument) -> list[str]:
    """Where the budgets come from, in one line, and how many observed layers could not be
    judged."""
    t = data.get("thresholds")
    thresholds = t if isinstance(t, dict) else {}
    if "step_cap" not in thresholds:
        return []  # written before budgets were stated
    unjudged = [e for e in data["layers"] if e["observed"] and e.get("judged") is False]
    tail = (
        [
            f"{len(unjudged)} observed layer(s) not judged: the reference's own engines are too far apart "
            f"there for any budget to tell a fault ({', '.join(str(e['op_index']) for e in unjudged[:8])}"
            f"{', …' if len(unjudged) > 8 else ''})"
        ]
        if unjudged
        else []
    )
    engines = data.get("spread_engines")
    if engines:
        budgets = [
            f"budgets: the reference's own spread ({engines}) × {thresholds.get('spread_factor', 0):g}, "
            f"quantized: + {thresholds.get('max_steps', 0):g} step, at most "
            f"{100 * thresholds.get('step_cap', 0):g} % of the type's range; beyond that a measure is not judged"
        ]
    else:
        budgets = [
            f"budgets: fixed (the reference has one engine): {thresholds.get('max_steps', 0):g} step for quantized "
            f"tensors, max abs {thresholds.get('float_rel_tolerance', 0):g} × max|reference| for float ones, "
            f"cosine ≥ {thresholds.get('cosine_min', 0):g}"
        ]
    return budgets + tail


SECTION = Section(
    NUMERICS_FILE,
    "numerics",
    lambda data, layers: validate(data, {(lay.subgraph, lay.op_index) for lay in layers}),
    at_load=True,
)

"""``numerics.json``: its shape (docs/bundle-format.md), validation on load, and reading it.

No TVM here: the language server and ``tvm-explorer numerics`` read it.
"""

from __future__ import annotations

import math

NUMERICS_FILE = "numerics.json"
SCHEMA_VERSION = 1
MODES = ("fused", "unfused")
METRICS = ("max_abs", "max_rel", "cosine", "steps")


class NumericsError(ValueError):
    """``numerics.json`` does not have the documented shape (the message says where)."""


def _number(value, where: str, nullable: bool = True):
    if value is None and nullable:
        return
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise NumericsError(f"{where} must be a number{' or null' if nullable else ''}")
    if isinstance(value, float) and math.isnan(value):
        raise NumericsError(f"{where} is NaN")


def _position(value, where: str) -> None:
    if value is None:
        return
    if not (isinstance(value, dict) and isinstance(value.get("subgraph"), int)
            and isinstance(value.get("op_index"), int)):
        raise NumericsError(f"{where} must be {{\"subgraph\": int, \"op_index\": int}} or null")


def _figures(entry: dict, where: str) -> None:
    if not isinstance(entry.get("observed"), bool):
        raise NumericsError(f"{where}: 'observed' must be true or false")
    for key in METRICS:
        _number(entry.get(key), f"{where}: '{key}'")
    if not isinstance(entry.get("diverges"), bool):
        raise NumericsError(f"{where}: 'diverges' must be true or false")
    for key in ("kernel", "hidden_in", "note"):
        if entry.get(key) is not None and not isinstance(entry[key], str):
            raise NumericsError(f"{where}: '{key}' must be a string or null")


def validate(data, layer_keys: set[tuple[int, int]] | None = None) -> dict:
    """Check ``data`` against the documented shape; returns it. ``layer_keys``: the bundle's
    ``(subgraph, op_index)`` pairs, which every entry must name."""
    if not isinstance(data, dict):
        raise NumericsError("must be a JSON object")
    if data.get("schema_version") != SCHEMA_VERSION:
        raise NumericsError(f"unknown schema_version {data.get('schema_version')!r}")
    if not isinstance(data.get("reference"), str):
        raise NumericsError("'reference' must be a string")
    if data.get("mode") not in MODES:
        raise NumericsError(f"'mode' must be one of {', '.join(MODES)}")
    layers = data.get("layers")
    if not isinstance(layers, list):
        raise NumericsError("'layers' must be a list")
    for i, entry in enumerate(layers):
        where = f"layer entry {i}"
        if not isinstance(entry, dict):
            raise NumericsError(f"{where} must be an object")
        if not (isinstance(entry.get("subgraph"), int) and isinstance(entry.get("op_index"), int)):
            raise NumericsError(f"{where}: 'subgraph' and 'op_index' must be integers")
        if layer_keys is not None and (entry["subgraph"], entry["op_index"]) not in layer_keys:
            raise NumericsError(f"{where} names op {entry['op_index']} of subgraph "
                                f"{entry['subgraph']}, which the model does not have")
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
    _position(data.get("first_divergence"), "'first_divergence'")
    _position(data.get("fused_first_divergence"), "'fused_first_divergence'")
    return data


def unit(data: dict) -> str:
    """What a layer is called in the model document: ``op`` (a TFLite operator) or ``node``
    (an ONNX or PyTorch graph node)."""
    model = str(data.get("model", "")).lower()
    return "node" if model.endswith((".onnx", ".pt2")) else "op"


def layer_entry(data: dict, subgraph: int, op_index: int) -> dict | None:
    """The entry of one layer in a validated ``numerics.json``."""
    for entry in data.get("layers", ()):
        if entry["subgraph"] == subgraph and entry["op_index"] == op_index:
            return entry
    return None


def format_error(entry: dict) -> str:
    """One line: ``max abs 1.2e-05 (rel 3e-06), cosine 1.000000, 0 steps — matches``."""
    if not entry.get("observed"):
        if entry.get("hidden_in"):
            return f"not observed (hidden inside kernel {entry['hidden_in']})"
        return f"not observed ({entry['note']})" if entry.get("note") else "not observed"
    def num(x):  # null: infinite (JSON has no infinity)
        return "inf" if x is None else f"{x:.3g}"

    parts = [f"max abs {num(entry['max_abs'])} (rel {num(entry['max_rel'])})",
             f"cosine {entry['cosine']:.6f}"]
    if entry.get("steps") is not None:
        budget = entry.get("step_budget")
        parts.append(f"{entry['steps']:g} steps" + (f" (budget {budget:g})" if budget else ""))
    verdict = "DIVERGES" if entry["diverges"] else "matches"
    note = f" ({entry['note']})" if entry.get("note") else ""
    return ", ".join(parts) + f" — {verdict}{note}"

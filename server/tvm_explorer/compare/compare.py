"""Match the layers of two bundles and say, per layer, what changed in its generated code."""

from __future__ import annotations

import os
from dataclasses import dataclass

from tvm_explorer.bundle.reader import Bundle
from tvm_explorer.compare.layers import LayerCode, layer_codes
from tvm_explorer.errors import ExplorerError


class UnrelatedBundles(ExplorerError):
    """The two bundles share no layer: they are not of one model or network."""


@dataclass
class Comparison:
    """Two bundles side by side."""

    a: Bundle
    b: Bundle
    matched_by: str  # "sha256" (same model) or "name" (variants of one network)
    pairs: list[tuple[LayerCode, LayerCode]]
    only_a: list[LayerCode]
    only_b: list[LayerCode]

    def pair(self, subgraph: int, op_index: int) -> tuple[LayerCode, LayerCode] | None:
        """The matched pair whose A layer is ``(subgraph, op_index)``."""
        for la, lb in self.pairs:
            if (la.layer.subgraph, la.layer.op_index) == (subgraph, op_index):
                return la, lb
        return None

    def to_json(self) -> dict:
        """The shape printed by ``tvm-explorer compare --json`` (docs/compare.md)."""
        return {
            "a": str(self.a.root),
            "b": str(self.b.root),
            "matched_by": self.matched_by,
            "a_info": _info(self.a),
            "b_info": _info(self.b),
            "layers": [_pair_json(la, lb) for la, lb in self.pairs],
            "unmatched": {"a": [_layer_ref(c) for c in self.only_a], "b": [_layer_ref(c) for c in self.only_b]},
        }


def _info(bundle: Bundle) -> dict:
    model = bundle.manifest.get("model") or {}
    return {
        "model": model.get("file"),
        "sha256": model.get("sha256"),
        "target": bundle.manifest.get("target"),
        "options": bundle.manifest.get("options") or {},
        "tvm": (bundle.manifest.get("tool") or {}).get("tvm"),
    }


def _layer_ref(code: LayerCode) -> dict:
    lay = code.layer
    return {"subgraph": lay.subgraph, "op_index": lay.op_index, "opcode": lay.opcode, "name": code.name}


def _side(code: LayerCode) -> dict:
    out = {
        "subgraph": code.layer.subgraph,
        "op_index": code.layer.op_index,
        "kernels": list(code.kernels),
        "code_lines": code.code_lines,
    }
    if code.costs:
        out["costs"] = dict(code.costs)
    return out


def _pair_json(la: LayerCode, lb: LayerCode) -> dict:
    lay = la.layer
    return {
        "subgraph": lay.subgraph,
        "op_index": lay.op_index,
        "opcode": lay.opcode,
        "name": la.name,
        "a": _side(la),
        "b": _side(lb),
        "changed": code_changed(la, lb),
        "kernels_changed": la.kernels != lb.kernels,
    }


def code_changed(la: LayerCode, lb: LayerCode) -> bool:
    """Whether the layer's generated code differs (kernel names aside)."""
    return la.normalized() != lb.normalized()


def _model_sha(bundle: Bundle) -> str | None:
    model = bundle.manifest.get("model")
    return model.get("sha256") if isinstance(model, dict) else None


def compare(a: str | os.PathLike | Bundle, b: str | os.PathLike | Bundle) -> Comparison:
    """Compare two bundles: of the same model (matched by layer, the model's sha256 being
    equal) or of variants of one network (matched by TF layer name and opcode)."""
    ba = a if isinstance(a, Bundle) else Bundle(a)
    bb = b if isinstance(b, Bundle) else Bundle(b)
    ca, cb = layer_codes(ba), layer_codes(bb)
    sha = _model_sha(ba)
    if sha and sha == _model_sha(bb):
        by_op = {(c.layer.subgraph, c.layer.op_index): c for c in cb}
        pairs = [(c, by_op[k]) for c in ca if (k := (c.layer.subgraph, c.layer.op_index)) in by_op]
        matched_by = "sha256"
    else:
        pairs = _match_by_name(ca, cb)
        matched_by = "name"
    if not pairs:
        raise UnrelatedBundles(
            f"{ba.root} ({_info(ba)['model']}) and {bb.root} ({_info(bb)['model']}) are not of "
            "one model or network: no layer of one matches a layer of the other by TF layer "
            "name and opcode"
        )
    got_a = {id(p[0]) for p in pairs}
    got_b = {id(p[1]) for p in pairs}
    return Comparison(
        ba, bb, matched_by, pairs, [c for c in ca if id(c) not in got_a], [c for c in cb if id(c) not in got_b]
    )


def _match_by_name(ca: list[LayerCode], cb: list[LayerCode]) -> list[tuple[LayerCode, LayerCode]]:
    """Pairs with equal (name, opcode); repeated keys pair up in layer order."""
    waiting: dict[tuple[str, str], list[LayerCode]] = {}
    for c in cb:
        if c.name:
            waiting.setdefault((c.name, c.layer.opcode), []).append(c)
    pairs = []
    for c in ca:
        queue = waiting.get((c.name, c.layer.opcode))
        if c.name and queue:
            pairs.append((c, queue.pop(0)))
    return pairs

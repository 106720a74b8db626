"""Match the layers of two bundles and say, per layer, what changed in its generated code."""

from __future__ import annotations

import os
from dataclasses import dataclass, field

from tvm_explorer.bundle.reader import Bundle
from tvm_explorer.bundle.sections.sass import SassDocument, SassLayer
from tvm_explorer.compare.layers import LayerCode, layer_codes
from tvm_explorer.compare.tuning import layer_tuning, side
from tvm_explorer.compare.types import (
    BundleSummary,
    CompareRow,
    CompareSide,
    ComparisonJson,
    LayerRefJson,
    LayerTuning,
    TuningPair,
)
from tvm_explorer.costs.static import CODE_KINDS, StaticCosts, code_size, comparable_kinds
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
    size_a: StaticCosts | None = None  # each side's code size (``costs.static.code_size``)
    size_b: StaticCosts | None = None
    _tuning: tuple[dict[int, LayerTuning] | None, dict[int, LayerTuning] | None] | None = field(
        default=None, repr=False
    )

    @property
    def code_kinds(self) -> tuple[str | None, str | None]:
        """The kind of code each side's lines are (``c``, ``cuda``, ``ll``; None: no code)."""
        return (
            self.size_a.code_kind if self.size_a else None,
            self.size_b.code_kind if self.size_b else None,
        )

    @property
    def same_code_kind(self) -> bool:
        """Whether code sizes and code can be compared: both sides are code of one kind
        (C or CUDA source with C or CUDA source, LLVM IR with LLVM IR), not C lines against
        LLVM IR lines (``costs.static.comparable_kinds``)."""
        return comparable_kinds(*self.code_kinds)

    def code_kinds_text(self) -> str:
        """``A: C, B: LLVM IR``."""
        a, b = (CODE_KINDS.get(k or "", "no code") for k in self.code_kinds)
        return f"A: {a}, B: {b}"

    def pair(self, subgraph: int, op_index: int) -> tuple[LayerCode, LayerCode] | None:
        """The matched pair whose A layer is ``(subgraph, op_index)``."""
        for la, lb in self.pairs:
            if (la.layer.subgraph, la.layer.op_index) == (subgraph, op_index):
                return la, lb
        return None

    def tuning(self) -> tuple[dict[int, LayerTuning] | None, dict[int, LayerTuning] | None]:
        """Each side's tuning per layer id (``compare.tuning.layer_tuning``; None: no tuning.json)."""
        if self._tuning is None:
            self._tuning = (layer_tuning(self.a), layer_tuning(self.b))
        return self._tuning

    def to_json(self) -> ComparisonJson:
        """The shape printed by ``tvm-explorer compare --json`` (docs/compare.md)."""
        ta, tb = self.tuning()
        tuned = ta is not None or tb is not None
        return {
            "a": str(self.a.root),
            "b": str(self.b.root),
            "matched_by": self.matched_by,
            "a_info": _info(self.a),
            "b_info": _info(self.b),
            "code_kinds": {"a": self.code_kinds[0], "b": self.code_kinds[1]},
            "code_compared": self.same_code_kind,
            "tuning_compared": tuned,
            "layers": [
                _pair_json(la, lb, self.same_code_kind, self.a.sass(), self.b.sass())
                | ({"tuning": _tuning_pair(side(ta, la.layer.id), side(tb, lb.layer.id))} if tuned else {})
                for la, lb in self.pairs
            ],
            "unmatched": {"a": [_layer_ref(c) for c in self.only_a], "b": [_layer_ref(c) for c in self.only_b]},
        }


def _info(bundle: Bundle) -> BundleSummary:
    model = bundle.manifest.get("model") or {}
    return {
        "model": model.get("file"),
        "sha256": model.get("sha256"),
        "target": bundle.manifest.get("target"),
        "options": bundle.manifest.get("options") or {},
        "tvm": (bundle.manifest.get("tool") or {}).get("tvm"),
    }


def _tuning_pair(a: LayerTuning, b: LayerTuning) -> TuningPair:
    """A layer's tuning on both sides and its kernels' measured time change (each compile's own
    measurement: ``tuning.json``'s times)."""
    change = b["us"] / a["us"] if a["us"] and b["us"] is not None else None
    return {"a": a, "b": b, "time_ratio": None if change is None else round(change, 4)}


def _layer_ref(code: LayerCode) -> LayerRefJson:
    lay = code.layer
    return {"subgraph": lay.subgraph, "op_index": lay.op_index, "opcode": lay.opcode, "name": code.name}


def _side(code: LayerCode) -> CompareSide:
    out: CompareSide = {
        "subgraph": code.layer.subgraph,
        "op_index": code.layer.op_index,
        "kernels": list(code.kernels),
        "code_lines": code.code_lines,
        "shared_code_lines": code.shared_lines,
    }
    if code.costs:
        out["costs"] = dict(code.costs)
    return out


def _machine(machine: SassDocument | None, code: LayerCode) -> SassLayer | None:
    return machine["layers"].get(str(code.layer.id)) if machine is not None else None


MACHINE_GROWTH = (("registers", "registers"), ("spilled", "spilled bytes"))


def machine_growth(a: SassLayer | None, b: SassLayer | None) -> list[str]:
    """What of a layer's machine code grew from A to B (``--sass`` bundles on both sides):
    ``["registers 56 -> 64", "spilled bytes 0 -> 128"]``."""
    if not a or not b:
        return []
    out = []
    for key, label in MACHINE_GROWTH:
        before, after = a.get(key, 0), b.get(key, 0)
        if isinstance(before, int) and isinstance(after, int) and after > before:
            out.append(f"{label} {before} -> {after}")
    return out


def _pair_json(
    la: LayerCode,
    lb: LayerCode,
    same_kind: bool = True,
    machine_a: SassDocument | None = None,
    machine_b: SassDocument | None = None,
) -> CompareRow:
    lay = la.layer
    ma, mb = _machine(machine_a, la), _machine(machine_b, lb)
    row: CompareRow = {
        "subgraph": lay.subgraph,
        "op_index": lay.op_index,
        "opcode": lay.opcode,
        "name": la.name,
        "a": _side(la),
        "b": _side(lb),
        "changed": code_changed(la, lb) if same_kind else None,
        "kernels_changed": la.kernels != lb.kernels,
    }
    if ma or mb:
        row["machine"] = {"a": ma, "b": mb, "grew": machine_growth(ma, mb)}
    return row


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
    size_a, size_b = code_size(ba), code_size(bb)
    ca, cb = layer_codes(ba, size_a), layer_codes(bb, size_b)
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
        ba,
        bb,
        matched_by,
        pairs,
        [c for c in ca if id(c) not in got_a],
        [c for c in cb if id(c) not in got_b],
        size_a,
        size_b,
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

"""Stage jumps: one IR level back in one step (declaration / ``tvmExplorer/previousStage``).

generated code -> the final TIR -> the Relax binding(s) calling the PrimFunc, in the last Relax
document -> the origin layer(s) in the model, the layers' main operators first. Pass-by-pass
stepping is ``passes.py``.
"""

from __future__ import annotations

from tvm_explorer.bundle.types import Document
from tvm_explorer.navigation.chain import previous_step
from tvm_explorer.navigation.view import BundleView, Keep, Place, keep_all

# Opcodes doing a layer's main work: listed before epilogues (bias add, activation, requantize).
MAIN_OPCODES = frozenset(
    {
        "CONV_2D",
        "DEPTHWISE_CONV_2D",
        "TRANSPOSE_CONV",
        "CONV_3D",
        "CONV_3D_TRANSPOSE",
        "FULLY_CONNECTED",
        "BATCH_MATMUL",
        "EMBEDDING_LOOKUP",
        "LSTM",
        "UNIDIRECTIONAL_SEQUENCE_LSTM",
        "AVERAGE_POOL_2D",
        "MAX_POOL_2D",
        "SOFTMAX",
    }
)


def main_first(view: BundleView, layer_ids) -> list[int]:
    """Layer ids, those doing main work (conv, matmul, ...) first, then in layer order."""
    layers = view.bundle.layers
    return sorted(set(layer_ids), key=lambda lid: (layers[lid].opcode not in MAIN_OPCODES, lid))


def model_places(view: BundleView, layer_ids) -> list[Place]:
    """The model entries of the layers, main operators first."""
    out: list[Place] = []
    for lid in main_first(view, layer_ids):
        out.extend(view.layer_map.model_places.get(lid, ()))
    return out


def _last(view: BundleView, stage: str) -> Document | None:
    docs = [d for d in view.bundle.documents if d.stage == stage]
    return docs[-1] if docs else None


def _callers(view: BundleView, primfunc_key: str, before: int) -> list[Place]:
    """The bindings calling a PrimFunc in the last Relax document that has any (searching
    back from the last one), or []."""
    for doc in reversed(view.bundle.documents[:before]):
        if doc.stage != "relax":
            continue
        found = view.bundle.index(doc.path).by_link(primfunc_key)
        if found:
            return [Place.of(doc.path, r) for r in found]
    return []


def _primfunc_keys(prim) -> list[str]:
    """The keys a PrimFunc is called by: its own, and for a device kernel split off by the
    CUDA lowering (``X_kernel``) the PrimFunc it came from (named by its trace link)."""
    keys = [prim.key]
    if prim.link and prim.link.startswith("trace:"):
        keys.append("prim:" + prim.link[len("trace:") :].rpartition(":")[0])
    if prim.key.endswith("_kernel"):
        keys.append(prim.key[: -len("_kernel")])
    return list(dict.fromkeys(keys))


def previous_stage(view: BundleView, path: str, offset: int, keep: Keep = keep_all) -> list[Place]:
    """The computation at ``offset`` one IR level back, or [] in the model document."""
    doc = view.bundle.document(path)
    if doc is None or doc.stage == "model":
        return []
    ranges = view.enclosing(path, offset, keep)
    if not ranges:
        return []
    layers = [o.layer.id for o in view.origins_of(ranges)]
    prim = next((r for r in ranges if r.kind == "primfunc"), None)
    if doc.stage == "code" and doc.source is not None:
        # Machine code: one level back is the source it was compiled from (its line information).
        if found := previous_step(view, path, offset, keep):
            return found
    if doc.stage == "code":
        last_tir = _last(view, "tir")
        if last_tir is not None:
            found = previous_step(view, path, offset, keep)
            if found and all(p.path == last_tir.path for p in found):
                return found
            if prim is not None:
                return [Place.of(last_tir.path, r) for r in view.bundle.index(last_tir.path).by_key(prim.key)]
        return model_places(view, layers)
    if doc.stage == "tir" and prim is not None:
        for key in _primfunc_keys(prim):
            if found := _callers(view, key, doc.order):
                return found
    if doc.stage == "relax" and prim is not None:
        # TIR printed inside a Relax module: the binding(s) of this document calling it.
        bindings = view.bundle.index(path).by_link(prim.key)
        if bindings:
            return [Place.of(path, r) for r in bindings]
    return model_places(view, layers)

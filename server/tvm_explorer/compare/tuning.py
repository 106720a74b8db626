"""What tuning did to each matched layer on either side of a comparison (``tuning.json``):
its state (tuned / untuned / database miss / build failed / run failed / mixed; ``no tuning`` when the bundle
was compiled without ``--tune``) and its kernels' time as built — the tuned time of a tuned
kernel, the default time of the others — as each compile measured it (docs/compare.md)."""

from __future__ import annotations

from tvm_explorer.bundle.reader import Bundle
from tvm_explorer.bundle.sections.tuning import TuningDocument, layer_states
from tvm_explorer.compare.types import LayerTuning

NO_TUNING = "no tuning"
LOST = ("untuned", "database miss", "build failed", "run failed", "mixed", NO_TUNING)


def _layer_times(doc: TuningDocument) -> dict[int, float | None]:
    """Layer id -> the measured time of the kernels computing it (None: one was not timed)."""
    out: dict[int, float | None] = {}
    for k in doc["kernels"]:
        now = k["tuned_us"] if k["state"] == "tuned" else k["default_us"]
        for lid in k["layers"]:
            before = out.get(lid, 0.0)
            out[lid] = None if before is None or now is None else before + now
    return out


def layer_tuning(bundle: Bundle) -> dict[int, LayerTuning] | None:
    """Layer id -> ``{"state", "speedup", "us"}``; None when the bundle has no tuning.json
    (raises BundleError naming the file when it is damaged)."""
    doc = bundle.tuning()
    if doc is None:
        return None
    times = _layer_times(doc)
    return {
        lid: {"state": word, "speedup": speedup, "us": None if times.get(lid) is None else round(times[lid] or 0, 4)}
        for lid, (word, speedup) in layer_states(doc).items()
    }


def side(states: dict[int, LayerTuning] | None, layer_id: int) -> LayerTuning:
    """One side of one layer: ``no tuning`` (no tuning.json) or what its ledger says (a layer no
    kernel computes — a reshape folded away — has no state)."""
    if states is None:
        return {"state": NO_TUNING, "speedup": None, "us": None}
    return states.get(layer_id) or {"state": None, "speedup": None, "us": None}


def lost_tuned_schedule(before: str | None, after: str | None) -> bool:
    """A layer tuned in BASE (its state ``before``) whose kernels are not all tuned in NEW."""
    return before == "tuned" and after in LOST

"""The capture side: time the passes, profile the built model if asked, and write
``costs.json`` into the bundle being written."""

from __future__ import annotations

import json
import os
from ..model.loader import LoadedModel
from . import model as costs_model
from ..runtime.inputs import DEFAULT_SEED, inputs_for
from .passclock import PassClock, align
from .profile import ProfileFailed, measure
from .request import DEFAULT_REPEAT, ProfileRequest  # noqa: F401 - re-exported
from .static import CodeDocument, analyse
from .work import kernel_work

_CODE_KINDS = {"code/module.c": "c", "code/device.cu": "cuda", "code/host.ll": "ll"}


class CostRecorder:
    """Follows one compile; ``finish`` writes ``costs.json``."""

    def __init__(self, model: LoadedModel, profile: ProfileRequest | None):
        self.model = model
        self.profile = profile
        self.clock = PassClock()
        self.arrays = None
        self.costs: dict | None = None
        if profile is not None:
            if profile.repeat < 1:
                from ..errors import ExplorerError

                raise ExplorerError(f"--repeat {profile.repeat}: needs at least 1 run")
            # Checked before anything is compiled: a bad --inputs file leaves nothing written.
            self.arrays = list(inputs_for(model, profile.inputs).values())

    def wrap(self, instruments: list) -> list:
        """``instruments`` with the pass clock's two watches around them."""
        first, last = self.clock.instruments()
        return [first, *instruments, last]

    def _profile(self, executable, target: str):
        if self.profile is None:
            return costs_model.ProfileStatus("not_requested", "compiled without --profile"), None
        inputs = os.path.basename(self.profile.inputs) if self.profile.inputs else f"random (seed {DEFAULT_SEED})"
        status = costs_model.ProfileStatus("measured", None, self.profile.repeat, inputs)
        if target == "cuda":
            import tvm

            status.device = "cuda"
            status.status = "unavailable"
            status.reason = ("no CUDA GPU on this machine" if not tvm.cuda().exist else
                             "CUDA kernels are generated as source only here (no nvcc build)")
            return status, None
        try:
            return status, measure(executable, target, self.arrays, self.profile.repeat)
        except ProfileFailed as err:
            status.status, status.reason = "failed", str(err)
            return status, None

    def finish(self, session, executable, target: str) -> dict:
        """Compute the costs of the finished compile and add ``costs.json`` to the bundle."""
        writer = session.writer
        origin_sets = session.origins.to_json()
        code_docs = []
        for path, kind in _CODE_KINDS.items():
            if writer.has_document(path):
                text, ranges = writer.written(path)
                code_docs.append(CodeDocument(kind, text, ranges))
        relax_path = session.last_document.get("relax")
        relax_final = writer.written(relax_path) if relax_path and writer.has_document(relax_path) else None
        static = analyse(code_docs, relax_final, origin_sets)
        work = (kernel_work(session.final_tir, session.origins.layers)
                if session.final_tir is not None else {})
        timed = align(writer.passes, self.clock.records)
        passes = [{"index": p["index"], "stage": p["stage"], "name": p["name"],
                   "ms": round(timed[p["index"]][0], 3) if p["index"] in timed else None,
                   "changed_functions": timed[p["index"]][1] if p["index"] in timed else None}
                  for p in writer.passes]
        status, measured = self._profile(executable, target)
        layers = [{"id": lay.id, "subgraph": lay.subgraph, "op_index": lay.op_index,
                   "opcode": lay.opcode, "name": lay.name} for lay in self.model.layers]
        self.costs = costs_model.build(layers, static, origin_sets, work, self.clock.flops, passes,
                                       target, status, measured)
        writer.add_file(costs_model.COSTS_FILE, json.dumps(self.costs, indent=1))
        return self.costs

"""The capture side: time the passes, profile the built model if asked, and write
``costs.json`` into the bundle being written."""

from __future__ import annotations

import json
import os
from typing import TYPE_CHECKING

from tvm_explorer.bundle.sections.costs import COSTS_FILE, validate
from tvm_explorer.costs import assemble
from tvm_explorer.costs.layer_work import kernel_work
from tvm_explorer.costs.passclock import PassClock, align
from tvm_explorer.costs.profile import Measured, ProfileFailed, measure, measure_on_device
from tvm_explorer.costs.request import ProfileRequest, as_request
from tvm_explorer.costs.static import CODE_DOCUMENTS, CodeDocument, analyse
from tvm_explorer.frontends.model import Model
from tvm_explorer.runtime.inputs import DEFAULT_SEED, inputs_for

if TYPE_CHECKING:
    import tvm

    from tvm_explorer.costs.gpu import CudaPlan


class CostRecorder:
    """Follows one compile; ``finish`` writes ``costs.json``."""

    def __init__(self, model: Model, profile: ProfileRequest | None):
        self.model = model
        self.profile = profile = as_request(profile)
        self.clock = PassClock()
        self.arrays = None
        self.costs: dict | None = None
        self.cuda_plan: CudaPlan | None = None
        self.cuda_reason: str | None = None
        self.final_relax: tvm.IRModule | None = None
        # What the profiled run allocated (runtime/allocations.py), or why it was not measured.
        self.allocations: dict | None = None
        self.allocations_why_not: str | None = None
        if profile is not None:
            from tvm_explorer.errors import ExplorerError

            if profile.repeat < 1:
                raise ExplorerError(f"--repeat {profile.repeat}: needs at least 1 run")
            if profile.timer not in ("auto", "device"):
                raise ExplorerError(f"profile timer {profile.timer!r}: choose 'auto' or 'device'")
            # Checked before anything is compiled: a bad --inputs file leaves nothing written.
            self.arrays = list(inputs_for(model, profile.inputs).values())

    def wrap(self, instruments: list) -> list:
        """``instruments`` with the pass clock's two watches around them."""
        first, last = self.clock.instruments()
        return [first, *instruments, last]

    def plan_build(self, target: str):
        """Before building: the ``costs.gpu.CudaPlan`` to build real kernels with when CUDA is
        to be profiled on a GPU here (else None, and the reason is kept for the profile)."""
        if self.profile is None or target != "cuda":
            return None
        from tvm_explorer.costs.gpu import cuda_plan

        self.cuda_plan, self.cuda_reason = cuda_plan()
        return self.cuda_plan

    def _profile(self, executable, target: str, labels: dict[str, str] | None = None):
        if self.profile is None:
            return assemble.ProfileStatus("not_requested", "compiled without --profile"), None
        inputs = os.path.basename(self.profile.inputs) if self.profile.inputs else f"random (seed {DEFAULT_SEED})"
        status = assemble.ProfileStatus("measured", None, self.profile.repeat, inputs)
        if executable is None:
            status.status, status.reason = "failed", "no executable to run (Capture.add_executable was not called)"
            return status, None
        if self.profile.remote is not None:
            return status, self._measure_remote(executable, target, status)
        try:
            if target == "cuda":
                status.device = "cuda"
                if self.cuda_plan is None and self.cuda_reason is None:
                    # A build this recorder did not prepare (the Python API's user built it).
                    if self.plan_build(target) is not None:
                        self.cuda_plan, self.cuda_reason = (
                            None,
                            (
                                "the CUDA kernels were built as source only; build with "
                                "cap.pipeline('cuda') and cap.target('cuda') to profile them"
                            ),
                        )
                if self.cuda_plan is None:
                    status.status, status.reason = "unavailable", self.cuda_reason
                    return status, None
                status.device_name = f"{self.cuda_plan.name} ({self.cuda_plan.arch})"
                return status, measure_on_device(executable, "cuda", self.arrays, self.profile.repeat, labels=labels)
            if self.profile.timer == "device":
                options = ["-O2"] if target == "c" else None
                return status, measure_on_device(
                    executable, "cpu", self.arrays, self.profile.repeat, options=options, labels=labels
                )
            return status, measure(executable, target, self.arrays, self.profile.repeat)
        except ProfileFailed as err:
            status.status, status.reason = "failed", str(err)
            return status, None

    def _measure_remote(self, executable, target: str, status) -> list[Measured]:
        """Every kernel call timed on the requested devices (RemoteError on any fault: the
        compile stops, and no partial measurement is written)."""
        from tvm_explorer.errors import RemoteError
        from tvm_explorer.remote.cross import resolve
        from tvm_explorer.remote.measure import measure_on_devices
        from tvm_explorer.remote.plan import ReplayError, replay_steps

        # _profile calls this only for a request with ``remote`` (its inputs made in __init__)
        assert self.profile is not None and self.profile.remote is not None and self.arrays is not None
        request = self.profile.remote
        compiler, triple = resolve(target, request.cc)
        if self.final_relax is None:
            raise RemoteError("no compiled Relax module to replay on the device")
        try:
            steps = replay_steps(self.final_relax, self.arrays)
        except ReplayError as err:
            raise RemoteError(f"cannot measure this model on a device: {err}") from None
        got = measure_on_devices(executable, target, steps, self.arrays, self.profile.repeat, request, compiler, triple)
        first = got[0][0]
        status.device = "cpu"
        status.device_name = first["description"]
        endpoint = request.rpc or request.tracker
        assert endpoint is not None  # a remote request names an RPC server or a tracker
        status.remote = {
            "via": "rpc" if request.rpc is not None else "tracker",
            "address": ":".join(map(str, endpoint)),
            "key": request.key,
            "devices": [record for record, _ in got],
            "combined": "median" if len(got) > 1 else None,
        }
        return [Measured(**result) for _, result in got]

    def _note_allocations(self, target: str, status, measured) -> None:
        if self.profile is None:
            return
        if isinstance(measured, list):  # remote devices: the first one's runs (remote/heap.py)
            self.allocations = measured[0].allocations if measured else None
            if self.allocations is None:
                self.allocations_why_not = "the device's run was not measured"
        elif measured is not None and measured.allocations is not None:
            self.allocations = measured.allocations
        elif target == "cuda":
            self.allocations_why_not = "the memory of a run is measured on the CPU targets (llvm, c) only"
        else:
            self.allocations_why_not = status.reason or "the run was not measured"

    def finish(self, session, executable, target: str) -> dict:
        """Compute the costs of the finished compile and add ``costs.json`` to the bundle."""
        writer = session.writer
        origin_sets = session.origins.to_json()
        code_docs = []
        for path, kind in CODE_DOCUMENTS.items():
            if writer.has_document(path):
                text, ranges = writer.written(path)
                code_docs.append(CodeDocument(kind, text, ranges))
        relax_path = session.last_document.get("relax")
        relax_final = writer.written(relax_path) if relax_path and writer.has_document(relax_path) else None
        static = analyse(code_docs, relax_final, origin_sets)
        work = kernel_work(session.final_tir, session.origins.layers) if session.final_tir is not None else {}
        timed = align(writer.passes, self.clock.records)
        passes = [
            {
                "index": p["index"],
                "stage": p["stage"],
                "name": p["name"],
                "ms": round(timed[p["index"]][0], 3) if p["index"] in timed else None,
                "changed_functions": timed[p["index"]][1] if p["index"] in timed else None,
            }
            for p in writer.passes
        ]
        self.final_relax = session.final_relax
        from tvm_explorer.costs.nvtx_ranges import layer_labels

        status, measured = self._profile(executable, target, layer_labels(work, self.model.layers))
        layers = [
            {"id": lay.id, "subgraph": lay.subgraph, "op_index": lay.op_index, "opcode": lay.opcode, "name": lay.name}
            for lay in self.model.layers
        ]
        self._note_allocations(target, status, measured)
        if isinstance(measured, list):
            try:
                self.costs = assemble.build_on_devices(
                    layers, static, origin_sets, work, self.clock.flops, passes, target, status, measured
                )
            except ValueError as err:
                from tvm_explorer.errors import RemoteError

                raise RemoteError(f"{status.remote and status.remote['address']}: {err}") from None
        else:
            self.costs = assemble.build(
                layers, static, origin_sets, work, self.clock.flops, passes, target, status, measured
            )
        self._check(status)
        writer.add_file(COSTS_FILE, json.dumps(self.costs, indent=1))
        return self.costs

    def _check(self, status) -> None:
        """Refuse costs the bundle's own reader would call damaged (a measurement that is not
        one), and, when a measurement is required (``tvm-explorer profile``), costs without one:
        the compile then stops, and the bundle it would replace stays as it was."""
        from tvm_explorer.errors import ExplorerError, RemoteError

        error = RemoteError if self.profile is not None and self.profile.remote is not None else ExplorerError
        kept = "nothing was written and the previous bundle is unchanged (its costs.json kept)"
        try:
            validate(self.costs, len(self.model.layers))
        except ValueError as err:
            raise error(f"the costs measured would not pass the bundle's own check ({err}); {kept}") from None
        if self.profile is not None and self.profile.required and status.status != "measured":
            raise error(f"the model was not measured ({status.status}: {status.reason}); {kept}")

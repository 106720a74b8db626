"""Snapshots of a compile and running them.

Every Relax module the pipeline produced (after each top-level Relax pass that changed it) is
a snapshot. A snapshot is built with one fixed, minimal lowering — TVM's own
``relax.pipeline.default_build_pipeline()``: legalization and VM lowering, no fusion, no
constant folding — and run on the inputs; the layer outputs are observed as ``--numerics``
does (numerics/observe.py), so a changed result can be pinned to a layer.

The TIR side cannot be run half-lowered: a build of the whole pipeline is rerun with chosen
TIR passes disabled (``PassContext(disabled_pass=...)``).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import tvm
from tvm import relax

from tvm_explorer.capture.compile_recorder import CaptureSession
from tvm_explorer.capture.pipeline import make_target
from tvm_explorer.frontends.model import Model
from tvm_explorer.numerics.observe import Observation, kernel_plan, run_observed
from tvm_explorer.numerics.run import runnable
from tvm_explorer.provenance import OriginTable
from tvm_explorer.runtime.inputs import model_inputs


@dataclass
class Snapshot:
    """The module after one recorded pass."""

    index: int
    name: str
    stage: str
    mod: object = field(repr=False)


@dataclass
class Run:
    """Outputs of one build on the inputs: the model's outputs and the observed layers."""

    outputs: list[np.ndarray]
    observation: Observation


def detached(mod):
    """A module of its own with ``mod``'s functions, attributes and global infos.

    Passes may change the module they are handed in place (``mod[gv] = f``, as TVM's own
    Python passes do): a snapshot that kept the object would change with it, and a build
    would change the snapshot it starts from. IR nodes are immutable, so a new function map
    is a true snapshot (``copy.copy`` of an IRModule crashes TVM 0.27)."""
    attrs = dict(mod.attrs) if mod.attrs else None
    return tvm.IRModule(dict(mod.functions.items()), attrs=attrs, global_infos=dict(mod.global_infos))


def result_arrays(value) -> list[np.ndarray]:
    """The model outputs a VM call returned, as arrays (a tensor, or a tuple of them)."""
    if hasattr(value, "numpy"):
        return [np.array(value.numpy(), copy=True)]
    try:
        items = list(value)
    except TypeError:
        return []
    out = []
    for item in items:
        out.extend(result_arrays(item))
    return out


class SnapshotRecorder:
    """A capture-session listener keeping every top-level Relax pass's module."""

    def __init__(self):
        self.snapshots: list[Snapshot] = []
        self.tir_passes: list[str] = []
        self._last_funcs = None

    def attach(self, session: CaptureSession) -> None:
        """Listen to ``session``'s recorded passes."""
        session.listeners.append(self.on_pass)

    def on_pass(self, index: int, name: str, stage: str, mod) -> None:
        """Keep Relax modules that changed; remember the TIR pass names."""
        if stage == "tir":
            if name not in ("input",) and name not in self.tir_passes:
                self.tir_passes.append(name)
            return
        funcs = {gv.name_hint: (gv, f) for gv, f in mod.functions.items()}
        if self._last_funcs is not None and not CaptureSession._changed(self._last_funcs, funcs):
            return
        self._last_funcs = funcs
        self.snapshots.append(Snapshot(index, name, stage, detached(mod)))


def run_snapshot(
    model: Model, origins: OriginTable, snapshot: Snapshot, target: str, inputs: dict[str, np.ndarray]
) -> Run:
    """Build a snapshot with the fixed minimal lowering and run it, observing layer outputs."""
    session = CaptureSession(model, None, origins)
    tgt = make_target(target)
    with tvm.transform.PassContext(opt_level=3, instruments=[session.instrument()]):
        executable = tvm.compile(detached(snapshot.mod), tgt, relax_pipeline=relax.pipeline.default_build_pipeline())
    return run_executable(model, executable, target, session.final_relax or snapshot.mod, origins, inputs)


def run_full(
    model: Model,
    origins: OriginTable,
    start,
    final_relax,
    target: str,
    pipeline,
    disabled: list[str],
    inputs: dict[str, np.ndarray],
) -> Run:
    """Build ``start`` (the imported module) with the whole pipeline again, ``disabled``
    passes left out, and run it. TIR passes leave the Relax side alone: its kernel calls are
    those of ``final_relax``, the last Relax module of the recorded compile."""
    from tvm_explorer.capture.pipeline import relax_pipeline

    tgt = make_target(target)
    with tvm.transform.PassContext(opt_level=3, disabled_pass=list(disabled)):
        executable = tvm.compile(detached(start), tgt, relax_pipeline=pipeline or relax_pipeline(target, tgt))
    return run_executable(model, executable, target, final_relax, origins, inputs)


def run_executable(model, executable, target, final_relax, origins, inputs) -> Run:
    plan = kernel_plan(final_relax, origins, model)
    ordered = [inputs[i.name] for i in model_inputs(model)]
    obs = run_observed(runnable(executable, target), plan, ordered, tvm.cpu())
    return Run(result_arrays(obs.result), obs)

"""``--numerics``: run the compiled model and the reference on the same inputs and compare
every layer output seen at a kernel boundary (docs/numerics.md).

Runs inside the compiling child, after the build and before the bundle is committed; the
normal (fused) build is the one the bundle documents. With ``unfused=True`` a debugging
variant is built from the same import with the fusion passes left out, so that layers
hidden inside fused kernels are seen one by one.
"""

from __future__ import annotations

import math
import os
import tempfile
from dataclasses import dataclass

import tvm

from tvm_explorer.bundle.sections.numerics import (
    SCHEMA_VERSION,
    NumericsDocument,
    budget_lines,
    headline,
    unit,
    validate,
)
from tvm_explorer.capture.c_source import export_c_library
from tvm_explorer.errors import ExplorerError
from tvm_explorer.frontends.model import Model
from tvm_explorer.numerics.compare import (
    ABS_CAP,
    COSINE_FLOOR,
    COSINE_MIN,
    FLOAT_ABS_FLOOR,
    FLOAT_REL_TOLERANCE,
    MAX_STEPS,
    SPREAD_FACTOR,
    STEP_CAP,
    Error,
    compare,
    worst,
)
from tvm_explorer.numerics.observe import KernelPlan, Observation, kernel_plan, run_observed
from tvm_explorer.numerics.reference import ReferenceRun, check_same_graph, describe, quantization_of, run_reference
from tvm_explorer.provenance import OriginTable
from tvm_explorer.remote.request import RemoteRequest
from tvm_explorer.runtime.inputs import DEFAULT_SEED, inputs_for, model_inputs

NUMERICS_TARGETS = ("llvm", "c")
FUSION_PASSES = ("FuseOps", "FuseTIR")


@dataclass
class NumericsOptions:
    """What the user asked for on the command line."""

    reference: str | None = None
    inputs: str | None = None
    unfused: bool = False
    seed: int = DEFAULT_SEED
    pipeline: str | None = None  # --pipeline MODULE:FUNCTION (the unfused variant uses it too)
    remote: RemoteRequest | None = None  # run the model on a device (TVM RPC); the reference here


def check_request(model: Model, target: str, options: NumericsOptions) -> None:
    """Fail fast, before compiling, on anything the user can fix: target, inputs, reference."""
    if options.remote is not None and target.split()[0] in NUMERICS_TARGETS:
        pass  # built for the device (llvm -mtriple=…, or c with its cross compiler)
    elif target not in NUMERICS_TARGETS:
        raise ExplorerError(
            f"--numerics runs the compiled model on this machine's CPU: use --target llvm or c (not {target})"
        )
    inputs_for(model, options.inputs, options.seed)
    describe(options.reference or model.path)  # a kind with no reference framework says so here
    if options.reference:
        if not os.path.isfile(options.reference):
            raise ExplorerError(f"{options.reference}: no such reference model")
        check_same_graph(model, options.reference)


def runnable(executable, target: str, c_fixes: list[str] | None = None):
    """A module the VM can run: LLVM builds run as they are; C source is compiled first
    (with the fixes of ``capture/c_source.py``, added to ``c_fixes`` when given)."""
    if target != "c":
        return executable
    with tempfile.TemporaryDirectory(prefix="tvm-explorer-numerics-") as tmp:
        lib = os.path.join(tmp, "model.so")
        applied = export_c_library(executable, lib)
        if c_fixes is not None:
            c_fixes.extend(f for f in applied if f not in c_fixes)
        return tvm.runtime.load_module(lib)


def build_unfused(model: Model, target: str, pipeline: str | None = None):
    """The debugging variant: same import, same pipeline, the fusion passes left out.
    Returns ``(executable, final Relax module, origins)``."""
    from tvm_explorer.capture.compile_recorder import CaptureSession
    from tvm_explorer.capture.pipeline import make_target, relax_pipeline
    from tvm_explorer.frontends import import_any

    origins = OriginTable()
    session = CaptureSession(model, None, origins)
    mod = import_any(model, origins)
    session.record("import", mod, "relax")
    tgt = make_target(target)
    if pipeline:
        from tvm_explorer.capture.custom_pipeline import make_pipeline

        chosen = make_pipeline(pipeline, tgt)
        session.containers.add(chosen.info.name)
    else:
        chosen = relax_pipeline(target, tgt)
    with tvm.transform.PassContext(opt_level=3, instruments=[session.instrument()], disabled_pass=list(FUSION_PASSES)):
        executable = tvm.compile(mod, tgt, relax_pipeline=chosen)
    return executable, session.final_relax, origins


def _observe(
    model,
    executable,
    target,
    final_relax,
    origins,
    inputs,
    remote: RemoteRequest | None = None,
    c_fixes: list[str] | None = None,
) -> tuple[KernelPlan, Observation]:
    plan = kernel_plan(final_relax, origins, model)
    ordered = [inputs[i.name] for i in model_inputs(model)]
    if remote is None:
        return plan, run_observed(runnable(executable, target, c_fixes), plan, ordered, tvm.cpu())
    return plan, _observe_on_device(executable, target, final_relax, plan, ordered, remote)


def _observe_on_device(executable, target, final_relax, plan, ordered, remote: RemoteRequest) -> Observation:
    """The model runs on the device (one call at a time, through the session); the outputs
    the plan watches come back here to be compared."""
    from tvm_explorer.errors import RemoteError
    from tvm_explorer.numerics.observe import Observer
    from tvm_explorer.remote.cross import resolve
    from tvm_explorer.remote.measure import observe_on_device
    from tvm_explorer.remote.plan import ReplayError, replay_steps

    compiler, triple = resolve(target, remote.cc)
    try:
        steps = replay_steps(final_relax, ordered)
    except ReplayError as err:
        raise RemoteError(f"cannot run this model on a device: {err}") from None
    observer = Observer(plan)
    device = observe_on_device(executable, target, steps, remote, compiler, triple, observer.after_call)
    found = observer.observation()
    found.device = device
    return found


def _finite(x):
    return None if x is None or (isinstance(x, float) and not math.isfinite(x)) else x


def _figures(layer, plan: KernelPlan, obs: Observation, ref: ReferenceRun, ours_q, ref_q, folded=False) -> dict:
    """The comparison of one layer in one mode (``folded``: every input of the layer is a
    constant, so the compiler may compute it at compile time)."""
    kernel = plan.kernel_of.get(layer.id)
    errors, note = [], None
    if kernel is not None and kernel in obs.unmatched:
        n_static, n_run = obs.unmatched[kernel]
        note = f"kernel {kernel} ran {n_run} times, {n_static} calls planned: calls not matched"
    elif kernel is not None:
        for j, t in enumerate(layer.outputs):
            value = obs.outputs.get((layer.id, j))
            if value is None or t.name not in ref.tensors:
                continue
            errors.append(
                compare(value, ref.tensors[t.name], ours_q.get(t.name), ref_q.get(t.name), ref.spread.get(t.name))
            )
    if kernel is not None and layer.id in obs.off_grid:
        note = (
            f"kernel {kernel} writes this output dequantized together with more work of the next layer: not comparable"
        )
    elif kernel is None and folded:
        note = "folded into a constant: its inputs are all constants, computed at compile time"
    elif kernel is None and layer.id not in plan.hidden_in:
        note = (
            "no kernel call of the compiled main is marked as producing this output "
            "(folded into a constant, computed in place, or its origin mark was lost)"
        )
    if not errors:
        return _not_compared(note, bool(folded and kernel is None), plan.hidden_in.get(layer.id))
    err: Error = worst(errors)
    out = {
        "observed": True,
        "folded": False,
        "max_abs": _finite(err.max_abs),
        "max_rel": _finite(err.max_rel),
        "cosine": err.cosine,
        "steps": err.steps,
        "diverges": err.diverges,
        "kernel": kernel,
        "hidden_in": None,
        "note": err.note,
    }
    out.update(_budgets(err))
    return out


def _budgets(err: Error) -> dict:
    """What an observed layer was allowed, and the reference's own spread it came from."""
    spread = err.spread
    return {
        "judged": err.judged,
        "step_budget": err.budget,
        "cosine_min": err.cosine_min,
        "abs_budget": _finite(err.abs_budget),
        "budget_ratio": _finite(err.ratio),
        "spread": None
        if spread is None
        else {"steps": spread.steps, "max_abs": _finite(spread.max_abs), "cosine": spread.cosine},
    }


def constant_layers(model) -> set[int]:
    """Ids of the main-graph layers whose every input is a constant or another such layer's
    output (a weight's DEQUANTIZE): the compiler folds them into constants."""
    made: set[str] = set()
    out = set()
    for layer in model.layers:
        if layer.subgraph != 0:
            continue
        if all(t.is_constant or t.name in made for t in layer.inputs):
            out.add(layer.id)
            made.update(t.name for t in layer.outputs)
    return out


def _first(entries: list[dict], key=lambda e: e) -> dict | None:
    for e in entries:
        fig = key(e)
        if fig and fig.get("observed") and fig.get("diverges"):
            return {"subgraph": e["subgraph"], "op_index": e["op_index"]}
    return None


def run_numerics(
    model: Model, target: str, executable, final_relax, origins: OriginTable, options: NumericsOptions
) -> NumericsDocument:
    """Compare every observable layer output with the reference; the ``numerics.json`` data.
    Raises ExplorerError when the model (or the reference) cannot run."""
    inputs = inputs_for(model, options.inputs, options.seed)
    reference_path = options.reference or model.path
    ref = run_reference(reference_path, inputs)
    ours_q = quantization_of(model.path) if options.reference else ref.quantization
    c_fixes: list[str] = []
    try:
        fused_plan, fused_obs = _observe(
            model, executable, target, final_relax, origins, inputs, options.remote, c_fixes
        )
    except ExplorerError:
        raise
    except Exception as err:  # noqa: BLE001 - a TVM runtime failure is reported, not raised
        raise ExplorerError(
            f"{model.path}: the compiled model failed to run ({' '.join(str(err).split())[:300]})"
        ) from None
    unfused = None
    if options.unfused:
        try:
            ex2, relax2, origins2 = build_unfused(model, target, options.pipeline)
            unfused = _observe(model, ex2, target, relax2, origins2, inputs, options.remote, c_fixes)
        except ExplorerError:
            raise
        except Exception as err:  # noqa: BLE001
            raise ExplorerError(
                f"{model.path}: the unfused debugging variant failed to build or run "
                f"({' '.join(str(err).split())[:300]})"
            ) from None
    layers = []
    constant = constant_layers(model)
    for layer in model.layers:
        folded = layer.id in constant
        fused = (
            _figures(layer, fused_plan, fused_obs, ref, ours_q, ref.quantization, folded)
            if layer.subgraph == 0
            else _other_subgraph()
        )
        entry = {"subgraph": layer.subgraph, "op_index": layer.op_index, "opcode": layer.opcode, "name": layer.name}
        if unfused is None:
            entry.update(fused)
            entry["observed_by"] = "fused" if fused["observed"] else None
        else:
            single = (
                _figures(layer, *unfused, ref, ours_q, ref.quantization, folded)
                if layer.subgraph == 0
                else _other_subgraph()
            )
            primary, by = (single, "unfused") if single["observed"] else (fused, "fused")
            entry.update(primary)
            entry["observed_by"] = by if primary["observed"] else None
            entry["fused"] = fused
        layers.append(entry)
    data = {
        "schema_version": SCHEMA_VERSION,
        "model": os.path.basename(model.path),
        "target": target,
        "reference": describe(reference_path),
        "reference_path": os.path.abspath(reference_path),
        "inputs": os.path.abspath(options.inputs) if options.inputs else f"seeded random (seed {options.seed})",
        "mode": "unfused" if unfused is not None else "fused",
        "thresholds": {
            "float_rel_tolerance": FLOAT_REL_TOLERANCE,
            "float_abs_floor": FLOAT_ABS_FLOOR,
            "cosine_min": COSINE_MIN,
            "max_steps": MAX_STEPS,
            "spread_factor": SPREAD_FACTOR,
            "step_cap": STEP_CAP,
            "cosine_floor": COSINE_FLOOR,
            "abs_cap": ABS_CAP,
        },
        "spread_engines": ref.spread_engines,
        "layers": layers,
        "first_divergence": _first(layers),
    }
    device = getattr(fused_obs, "device", None)
    if device is not None:  # the model ran on a remote device; the reference here
        data["ran_on"] = f"{device['description']} ({device['address']}" + (
            f", key {device['key']})" if device.get("key") else ")"
        )
    if unfused is not None:
        data["fused_first_divergence"] = _first(layers, lambda e: e["fused"])
    if c_fixes:
        data["c_fixes"] = c_fixes
    return validate(data, {(lay.subgraph, lay.op_index) for lay in model.layers})


def _not_compared(note: str | None, folded: bool = False, hidden_in=None) -> dict:
    """A layer's numerics entry when nothing of it was compared (``note`` says why)."""
    return {
        "observed": False,
        "folded": folded,
        "max_abs": None,
        "max_rel": None,
        "cosine": None,
        "steps": None,
        "diverges": False,
        "kernel": None,
        "hidden_in": hidden_in,
        "note": note,
    }


def _other_subgraph() -> dict:
    return _not_compared("in a nested subgraph (control flow): not compared")


def summary_lines(data: NumericsDocument) -> list[str]:
    """What ``compile --numerics`` prints after the bundle line."""
    lines = [
        f"  numerics ({data['mode']}): {headline(data)} against the {data['reference']}"
        + (f"; the model ran on {data['ran_on']}" if data.get("ran_on") else "")
    ]
    lines.extend(f"  {line}" for line in budget_lines(data))
    first = data["first_divergence"]
    if first is None:
        lines.append("  no layer diverges")
    else:
        e = next(x for x in data["layers"] if (x["subgraph"], x["op_index"]) == (first["subgraph"], first["op_index"]))
        lines.append(f"  first divergence: {unit(data)} {e['op_index']} {e['opcode']} {e['name']}")
    return lines

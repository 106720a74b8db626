"""Import a ``tvm.relax.frontend.nn`` model: export it again with recording (the export is
cheap and deterministic: the same nodes in the same order as ``describe_nn`` found), stamp
every binding with its node, bind the parameters as constants, and call the first method
``main`` (what the VM, ``--profile`` and ``--numerics`` run)."""

from __future__ import annotations

from tvm_explorer.errors import ModelError
from tvm_explorer.frontends.graph import GraphModel
from tvm_explorer.frontends.nn.export import export_recorded, parameter_arrays
from tvm_explorer.frontends.stamping import Recorder, stamp_module
from tvm_explorer.provenance import OriginTable


class _NodeRecorder(Recorder):
    def operator_error(self, err: Exception) -> ModelError:
        return ModelError(f"{self.model.path}: {err}")


def import_nn(model: GraphModel, origins: OriginTable | None, *, fill_spans: bool = True):
    """The Relax IRModule of the model's module and spec (spans filled unless told not)."""
    import tvm
    from tvm import relax

    module, spec = model.payload
    mod, params, recording = export_recorded(module, spec, model.path)
    if len(recording.nodes) != len(model.layers) or any(
        a.opcode != b.opcode or a.name != b.name for a, b in zip(recording.nodes, model.layers)
    ):
        raise ModelError(f"{model.path}: the module emitted different ops on a second export (is it deterministic?)")
    if fill_spans and origins is not None:
        recorder = _NodeRecorder(model)
        for key, nid in recording.var_node.items():
            recorder.var_origin[key] = (nid, True)
        recorder._keep.extend(recording.keep)
        stamp_module(mod, recorder, origins)
    arrays = parameter_arrays(params, model.path)
    names = [gv.name_hint for gv, f in mod.functions.items() if isinstance(f, relax.Function)]
    first = "main" if "main" in names else next((n for n in names if not n.startswith("_")), None)
    if first is None:
        raise ModelError(f"{model.path}: the spec names no method to compile")
    if arrays:
        mod = relax.transform.BindParams(first, {k: tvm.runtime.tensor(v) for k, v in arrays.items()})(mod)
    if first != "main":
        func = mod[first].with_attr("global_symbol", "main")
        funcs = {("main" if gv.name_hint == first else gv.name_hint): f for gv, f in mod.functions.items()}
        funcs["main"] = func
        mod = tvm.IRModule(funcs, attrs=mod.attrs)
    return mod

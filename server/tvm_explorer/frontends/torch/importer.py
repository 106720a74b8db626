"""TVM 0.27's own PyTorch importer (``from_exported_program``), extended from outside so
every binding knows its graph node.

``ExportedProgramImporter._translate_fx_graph`` loops over the FX nodes and calls one
converter per ``call_function`` node; we hand it the node list as a walk that tells our
recorder which node is being converted. Its BlockBuilder is the recording proxy the TFLite
import uses, and its node table ``env`` marks what a node stores as that node's output.
The IR is the stock IR (structurally equal; a test proves it) plus spans.
"""

from __future__ import annotations

import threading

from tvm_explorer.errors import ModelError
from tvm_explorer.frontends.graph import GraphModel
from tvm_explorer.frontends.recording import (
    NodeRecorder,
    import_failure,
    naming_the_node,
    node_error,
    recording_table,
    stamping_builder,
    walk_nodes,
)
from tvm_explorer.frontends.stamping import stamp_module
from tvm_explorer.provenance import OriginTable


def _importer_class(model: GraphModel, recorder: NodeRecorder):
    from tvm.relax.frontend.torch.exported_program_translator import ExportedProgramImporter

    class SpanFillingImporter(ExportedProgramImporter):
        """``ExportedProgramImporter`` that records, per binding, the FX node it came from."""

        env = recording_table("env", recorder)
        block_builder = stamping_builder("block_builder", recorder)

        def _translate_fx_graph(self, graph_module, nodes, inputs_vars, custom_ops=None):
            walk = walk_nodes(((model.node_ids.get(id(node)), node) for node in nodes), recorder)
            with naming_the_node(model, recorder):
                return super()._translate_fx_graph(graph_module, walk, inputs_vars, custom_ops)

        def _check_unsupported_func_type(self, nodes):
            for node in nodes:
                if node.op == "call_function" and node.target.__name__ not in self.convert_map:
                    layer = model.layers[model.node_ids[id(node)]]
                    raise node_error(
                        model, layer, NotImplementedError(f"{layer.opcode} is not supported by TVM's PyTorch frontend")
                    )
            return super()._check_unsupported_func_type(nodes)

    return SpanFillingImporter


_IMPORT_LOCK = threading.Lock()


def import_torch(model: GraphModel, origins: OriginTable | None, *, fill_spans: bool = True):
    """Import the (decomposed) program of ``model`` with TVM's PyTorch frontend; with spans,
    every binding knows its node. Raises ModelError naming the node on failure."""
    recorder = NodeRecorder(model)
    try:
        from tvm.relax.frontend.torch import from_exported_program

        if not fill_spans:
            return from_exported_program(model.payload, run_ep_decomposition=False)
        with _IMPORT_LOCK:
            mod = _importer_class(model, recorder)().from_exported_program(model.payload, False, False, False, None)
    except ModelError:
        raise
    except Exception as err:  # noqa: BLE001 - anything else the importer raises
        raise import_failure(model, recorder, err, "PyTorch") from None
    assert origins is not None  # None only for a plain import (fill_spans=False)
    stamp_module(mod, recorder, origins)
    return mod

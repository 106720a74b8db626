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

from ...capture.importer import _stamp_module, _StampingBuilder
from ...errors import ModelError
from ...provenance import OriginTable
from ..graph import GraphModel
from ..onnx.importer import _NodeRecorder, node_error


class _RecordingEnv(dict):
    """``fx.Node -> relax expression``; a value stored while a node converts is its output."""

    recorder: _NodeRecorder

    def __setitem__(self, key, value):
        if self.recorder.current is not None:
            self.recorder.own(value, self.recorder.current, is_output=True)
        super().__setitem__(key, value)


def _importer_class(model: GraphModel, recorder: _NodeRecorder):
    from tvm.relax.frontend.torch.exported_program_translator import ExportedProgramImporter

    class SpanFillingImporter(ExportedProgramImporter):
        """``ExportedProgramImporter`` that records, per binding, the FX node it came from."""

        @property
        def env(self):
            return self.__dict__["env"]

        @env.setter
        def env(self, table):
            rec_table = _RecordingEnv(table)
            rec_table.recorder = recorder
            self.__dict__["env"] = rec_table

        @property
        def block_builder(self):
            return self.__dict__["block_builder"]

        @block_builder.setter
        def block_builder(self, builder):
            self.__dict__["block_builder"] = (
                builder if builder is None else _StampingBuilder(builder, recorder))

        def _walk(self, nodes):
            outer = recorder.current
            try:
                for node in nodes:
                    recorder.current = model.node_ids.get(id(node))
                    yield node
            finally:
                recorder.current = outer

        def _translate_fx_graph(self, graph_module, nodes, inputs_vars, custom_ops=None):
            try:
                return super()._translate_fx_graph(graph_module, self._walk(nodes), inputs_vars, custom_ops)
            except ModelError:
                raise
            except Exception as err:  # noqa: BLE001 - name the node being converted
                if recorder.current is None:
                    raise
                raise node_error(model, model.layers[recorder.current], err) from None

        def _check_unsupported_func_type(self, nodes):
            for node in nodes:
                if node.op == "call_function" and node.target.__name__ not in self.convert_map:
                    layer = model.layers[model.node_ids[id(node)]]
                    raise node_error(model, layer, NotImplementedError(
                        f"{layer.opcode} is not supported by TVM's PyTorch frontend"))
            return super()._check_unsupported_func_type(nodes)

    return SpanFillingImporter


_IMPORT_LOCK = threading.Lock()


def import_torch(model: GraphModel, origins: OriginTable | None, *, fill_spans: bool = True):
    """Import the (decomposed) program of ``model`` with TVM's PyTorch frontend; with spans,
    every binding knows its node. Raises ModelError naming the node on failure."""
    recorder = _NodeRecorder(model)
    try:
        from tvm.relax.frontend.torch import from_exported_program

        if not fill_spans:
            return from_exported_program(model.payload, run_ep_decomposition=False)
        with _IMPORT_LOCK:
            mod = _importer_class(model, recorder)().from_exported_program(
                model.payload, False, False, False, None)
    except ModelError:
        raise
    except Exception as err:  # noqa: BLE001 - anything else the importer raises
        if recorder.current is not None:
            raise node_error(model, model.layers[recorder.current], err) from None
        text = " ".join(str(err).split()) or type(err).__name__
        raise ModelError(f"{model.path}: TVM's PyTorch importer failed: {text[:400]}") from None
    _stamp_module(mod, recorder, origins)
    return mod

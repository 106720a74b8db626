"""TVM 0.27's own ONNX importer, extended from outside so every binding knows its node.

Stock ``from_onnx`` sets no spans. ``ONNXGraphImporter._construct_nodes`` loops over
``graph.node``; we hand it the same graph whose node list, as it is walked, tells our
recorder which node is being converted (``_convert_subgraph`` likewise for ``If`` branches).
The importer's BlockBuilder is the recording proxy the TFLite import uses (it binds nested
expressions bottom-up exactly as the normalizer would), and its node table ``_nodes`` marks
what is stored under a node's output names as that node's output. The IR is the stock IR
(structurally equal; a test proves it) plus spans.
"""

from __future__ import annotations

import contextlib
import io
import threading
import warnings

from tvm.relax.frontend.onnx import onnx_frontend as onnx_fe

from tvm_explorer.errors import ModelError
from tvm_explorer.frontends.graph import GraphModel
from tvm_explorer.frontends.onnx.loader import graph_key
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


class _WalkedGraph:
    """A GraphProto whose ``node`` list announces each node to the recorder as it is reached."""

    def __init__(self, graph, ids: list[int], recorder: NodeRecorder):
        self._graph, self._ids, self._rec = graph, ids, recorder

    def __getattr__(self, name):
        return getattr(self._graph, name)

    @property
    def node(self):
        return walk_nodes(zip(self._ids, self._graph.node), self._rec)


def _importer_class(model: GraphModel, recorder: NodeRecorder):
    class SpanFillingONNXImporter(onnx_fe.ONNXGraphImporter):
        """``ONNXGraphImporter`` that records, per binding, the ONNX node it came from."""

        _nodes = recording_table("_nodes", recorder)
        bb = stamping_builder("bb", recorder)

        def _walk(self, graph):
            return _WalkedGraph(graph, model.node_ids.get(graph_key(graph), []), recorder)

        def _construct_nodes(self, graph):
            with naming_the_node(model, recorder):
                return super()._construct_nodes(self._walk(graph))

        def _convert_subgraph(self, bb, graph):
            return super()._convert_subgraph(bb, self._walk(graph))

        def _check_for_unsupported_ops(self, graph):
            convert_map = onnx_fe._get_convert_map()
            for node in model.layers:
                if node.opcode not in convert_map and node.opcode not in ("If", "Constant"):
                    raise node_error(
                        model,
                        node,
                        NotImplementedError(f"operator {node.opcode} is not supported by TVM's ONNX frontend"),
                    )
            return super()._check_for_unsupported_ops(graph)

    return SpanFillingONNXImporter


_IMPORT_LOCK = threading.Lock()


def _opset(proto) -> int:
    for ident in proto.opset_import:
        if str(ident.domain) in ("ai.onnx", ""):
            return ident.version
    return 1


def import_onnx(model: GraphModel, origins: OriginTable | None, *, fill_spans: bool = True):
    """Import ``model`` with TVM's ONNX frontend; with spans, every binding knows its node.

    Returns the Relax IRModule. Raises ModelError naming the node on failure.
    """
    proto = model.payload
    recorder = NodeRecorder(model)
    try:
        # The importer prints its own failures and warns about renamed inputs: our message
        # (or the bundle) says what matters.
        with warnings.catch_warnings(), contextlib.redirect_stdout(io.StringIO()):
            warnings.simplefilter("ignore")
            shape_dict = {name: list(dims) for name, dims in model.pinned.items()}
            if not fill_spans:
                return onnx_fe.from_onnx(proto, shape_dict=shape_dict or None)
            if proto.ir_version < 3:
                raise ModelError(
                    f"{model.path}: ONNX IR version {proto.ir_version} is older than TVM's importer reads (3)"
                )
            with _IMPORT_LOCK:
                importer = _importer_class(model, recorder)(shape_dict, "float32")
                mod = importer.from_onnx(proto.graph, _opset(proto))
    except ModelError:
        raise
    except Exception as err:  # noqa: BLE001 - anything else the importer raises
        raise import_failure(model, recorder, err, "ONNX") from None
    assert origins is not None  # None only for a plain import (fill_spans=False)
    stamp_module(mod, recorder, origins)
    return mod

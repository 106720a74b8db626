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

from ...capture.importer import _Recorder, _StampingBuilder, _stamp_module
from ...errors import ModelError
from ...provenance import OriginTable
from ..graph import GraphModel
from .loader import graph_key


class _NodeRecorder(_Recorder):
    def operator_error(self, err: Exception) -> ModelError:
        return node_error(self.model, self.model.layers[self.current], err)


def node_error(model: GraphModel, node, err: Exception) -> ModelError:
    """One message naming the model and the node (index, op type, name) that failed."""
    msg = " ".join(str(err).split()) or type(err).__name__
    if isinstance(err, (KeyError, IndexError)):
        msg = f"{type(err).__name__}: {msg}"
    name = f" '{node.name}'" if node.name else ""
    return ModelError(f"{model.path}: node {node.op_index} ({node.opcode}{name}) cannot be imported "
                      f"by TVM: {msg[:400]}")


class _RecordingNodes(dict):
    """The importer's name -> expression table; a value stored while a node is converted is
    that node's output."""

    recorder: _NodeRecorder

    def __setitem__(self, key, value):
        rec = self.recorder
        if rec.current is not None:
            rec.own(value, rec.current, is_output=True)
        super().__setitem__(key, value)


class _WalkedGraph:
    """A GraphProto whose ``node`` list announces each node to the recorder as it is reached."""

    def __init__(self, graph, ids: list[int], recorder: _NodeRecorder):
        self._graph, self._ids, self._rec = graph, ids, recorder

    def __getattr__(self, name):
        return getattr(self._graph, name)

    @property
    def node(self):
        outer = self._rec.current
        try:
            for nid, node in zip(self._ids, self._graph.node):
                self._rec.current = nid
                yield node
        finally:
            self._rec.current = outer


def _importer_class(model: GraphModel, recorder: _NodeRecorder):
    class SpanFillingONNXImporter(onnx_fe.ONNXGraphImporter):
        """``ONNXGraphImporter`` that records, per binding, the ONNX node it came from."""

        @property
        def _nodes(self):
            return self.__dict__["_nodes"]

        @_nodes.setter
        def _nodes(self, table):
            rec_table = _RecordingNodes(table)
            rec_table.recorder = recorder
            self.__dict__["_nodes"] = rec_table

        @property
        def bb(self):
            return self.__dict__["bb"]

        @bb.setter
        def bb(self, builder):
            self.__dict__["bb"] = _StampingBuilder(builder, recorder)

        def _walk(self, graph):
            return _WalkedGraph(graph, model.node_ids.get(graph_key(graph), []), recorder)

        def _construct_nodes(self, graph):
            try:
                return super()._construct_nodes(self._walk(graph))
            except ModelError:
                raise
            except Exception as err:  # noqa: BLE001 - name the node being converted
                if recorder.current is None:
                    raise
                raise node_error(model, model.layers[recorder.current], err) from None

        def _convert_subgraph(self, bb, graph):
            return super()._convert_subgraph(bb, self._walk(graph))

        def _check_for_unsupported_ops(self, graph):
            convert_map = onnx_fe._get_convert_map()
            for node in model.layers:
                if node.opcode not in convert_map and node.opcode not in ("If", "Constant"):
                    raise node_error(model, node, NotImplementedError(
                        f"operator {node.opcode} is not supported by TVM's ONNX frontend"))
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
    recorder = _NodeRecorder(model)
    try:
        # The importer prints its own failures and warns about renamed inputs: our message
        # (or the bundle) says what matters.
        with warnings.catch_warnings(), contextlib.redirect_stdout(io.StringIO()):
            warnings.simplefilter("ignore")
            if not fill_spans:
                return onnx_fe.from_onnx(proto)
            if proto.ir_version < 3:
                raise ModelError(f"{model.path}: ONNX IR version {proto.ir_version} is older than "
                                 "TVM's importer reads (3)")
            with _IMPORT_LOCK:
                importer = _importer_class(model, recorder)({}, "float32")
                mod = importer.from_onnx(proto.graph, _opset(proto))
    except ModelError:
        raise
    except Exception as err:  # noqa: BLE001 - anything else the importer raises
        if recorder.current is not None:
            raise node_error(model, model.layers[recorder.current], err) from None
        text = " ".join(str(err).split()) or type(err).__name__
        raise ModelError(f"{model.path}: TVM's ONNX importer failed: {text[:400]}") from None
    _stamp_module(mod, recorder, origins)
    return mod

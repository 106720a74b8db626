"""What the ONNX and PyTorch importers share to record, per binding, the graph node it came from.

Both of TVM's importers keep a BlockBuilder and a table from graph names to Relax expressions
in instance attributes. A subclass replaces the two attributes by ``stamping_builder`` and
``recording_table`` properties: every value the importer assigns is wrapped on the way in, so
bindings made while a node converts are stamped with that node, and what the node stores in its
table is marked as the node's output. ``converting_nodes`` announces each node as the importer
reaches it and names the node in any failure.
"""

from __future__ import annotations

import contextlib

from tvm_explorer.errors import ModelError
from tvm_explorer.frontends.graph import GraphModel
from tvm_explorer.frontends.stamping import Recorder, StampingBuilder


class NodeRecorder(Recorder):
    """The TFLite import's recorder, naming graph nodes (not TFLite operators) in failures."""

    def operator_error(self, err: Exception) -> ModelError:
        return node_error(self.model, self.model.layers[self.current], err)


def node_error(model: GraphModel, node, err: Exception) -> ModelError:
    """One message naming the model and the node (index, op type, name) that failed, the
    shapes it was given, and the open input dimensions that may be why (``--input-shape``)."""
    msg = " ".join(str(err).split()) or type(err).__name__
    if isinstance(err, (KeyError, IndexError)):
        msg = f"{type(err).__name__}: {msg}"
    name = f" '{node.name}'" if node.name else ""
    return ModelError(
        f"{model.path}: node {node.op_index} ({node.opcode}{name}) cannot be imported by TVM: {msg[:400].rstrip('.')}"
        + _node_inputs(model, node)
        + (_open_inputs(model) if _reads_open_dims(model, node) else "")
    )


def _reads_open_dims(model: GraphModel, node) -> bool:
    """Whether a size the node reads is open (symbolic, unknown, or an input without shape):
    only then may pinning the model's inputs be the cure."""
    from tvm_explorer.frontends.input_shapes import is_open

    shapeless = {n for n, s in model.declared_inputs if s is None}
    return any(
        t.name in shapeless or t.dtype == "?" or any(is_open(d) for d in t.shape)
        for t in node.inputs
        if not t.is_constant
    )


def _node_inputs(model: GraphModel, node) -> str:
    """``; its inputs: r float32[1,4,H,W] (H, W symbolic)``."""
    from tvm_explorer.frontends.input_shapes import shape_text

    shown = [t for t in node.inputs if not t.is_constant][:6]
    if not shown:
        return ""
    shapeless = {n for n, s in model.declared_inputs if s is None and n not in model.pinned}
    texts = [
        f"{t.name} {t.dtype} (no shape)"
        if t.name in shapeless
        else (f"{t.name} {t.dtype}{shape_text(t.shape)}" if t.dtype != "?" else f"{t.name} (shape unknown)")
        for t in shown
    ]
    symbolic = list(dict.fromkeys(d for t in shown for d in t.shape if isinstance(d, str)))
    return "; its inputs: " + ", ".join(texts) + (f" ({', '.join(symbolic)} symbolic)" if symbolic else "")


def _open_inputs(model: GraphModel) -> str:
    """``. H and W of input 'x' [1,3,H,W] are open: pin them with --input-shape …``, or ''."""
    from tvm_explorer.frontends.input_shapes import pin_suggestion

    hint = pin_suggestion([(n, s) for n, s in model.declared_inputs if n not in model.pinned])
    return f". {hint[0].upper()}{hint[1:]}" if hint else ""


class _RecordingTable(dict):
    """The importer's name -> expression table; a value stored while a node is converted is
    that node's output."""

    def __init__(self, table, recorder: NodeRecorder):
        super().__init__(table)
        self.recorder = recorder

    def __setitem__(self, key, value):
        if self.recorder.current is not None:
            self.recorder.own(value, self.recorder.current, is_output=True)
        super().__setitem__(key, value)


def _wrapping_attribute(name: str, wrap) -> property:
    """An instance attribute that stores ``wrap(value)`` whenever the importer assigns it."""

    def get(self):
        return self.__dict__[name]

    def set_(self, value):
        self.__dict__[name] = wrap(value)

    return property(get, set_)


def recording_table(name: str, recorder: NodeRecorder) -> property:
    """The importer's node table ``name``, marking what a node stores as that node's output."""
    return _wrapping_attribute(name, lambda table: _RecordingTable(table, recorder))


def stamping_builder(name: str, recorder: NodeRecorder) -> property:
    """The importer's BlockBuilder ``name``, stamping each binding with the node converting."""
    return _wrapping_attribute(name, lambda builder: builder if builder is None else StampingBuilder(builder, recorder))


def walk_nodes(numbered, recorder: NodeRecorder):
    """Yield the nodes of ``numbered`` ((id, node) pairs), telling ``recorder`` each one's id
    as it is reached.

    An importer that fails inside its loop over the nodes drops this generator while the
    exception unwinds, which closes it before any handler runs: the node it was converting is
    kept as ``recorder.abandoned`` (the innermost, when an ``If`` branch failed) so the
    failure can still name it."""
    outer = recorder.current
    finished = False
    try:
        for nid, node in numbered:
            recorder.current = nid
            recorder.abandoned = None
            yield node
        finished = True
    finally:
        if not finished and recorder.abandoned is None:
            recorder.abandoned = recorder.current
        recorder.current = outer


def _failing_node(recorder: NodeRecorder) -> int | None:
    if recorder.current is not None:
        return recorder.current
    return recorder.abandoned


@contextlib.contextmanager
def naming_the_node(model: GraphModel, recorder: NodeRecorder):
    """Turn a failure while a node converts into one ModelError naming that node."""
    try:
        yield
    except ModelError:
        raise
    except Exception as err:  # noqa: BLE001 - name the node being converted
        failing = _failing_node(recorder)
        if failing is None:
            raise
        raise node_error(model, model.layers[failing], err) from None


def import_failure(model: GraphModel, recorder: NodeRecorder, err: Exception, importer: str) -> ModelError:
    """The message for anything else an importer raised: the node when one was converting."""
    failing = _failing_node(recorder)
    if failing is not None:
        return node_error(model, model.layers[failing], err)
    text = " ".join(str(err).split()) or type(err).__name__
    return ModelError(f"{model.path}: TVM's {importer} importer failed: {text[:400]}{_open_inputs(model)}")

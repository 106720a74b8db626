"""TVM 0.27's own TFLite importer, extended from outside so every binding knows its operator.

Stock ``from_tflite`` sets no spans. We subclass its ``OperatorConverter`` and put a proxy in
front of its BlockBuilder: every expression a converter hands to the builder is bound
bottom-up by us (exactly as the builder's normalizer would bind nested arguments, in the same
order and with the same memo), so we see every binding created and know which operator was
being converted at the time. An operator's result that stays unbound until a later operator
uses it is recognised by object identity and still credited to the operator that made it.
The emitted IR is the stock IR (structurally equal; a test proves it) plus spans.
"""

from __future__ import annotations

import functools
import threading
import types

from tvm import relax
from tvm.relax.frontend.tflite import tflite_frontend as tfl

from tvm_explorer.errors import ModelError
from tvm_explorer.frontends.stamping import Recorder, StampingBuilder, stamp_module
from tvm_explorer.frontends.tflite.loader import LoadedModel
from tvm_explorer.provenance import OriginTable


def _subgraph_index(model, subgraph) -> int:
    pos = subgraph._tab.Pos
    for i in range(model.SubgraphsLength()):
        if model.Subgraphs(i)._tab.Pos == pos:
            return i
    return 0


class _WrappedConverters(dict):
    """The converter table with every converter wrapped by ``wrap(opcode, fn)``, each one
    wrapped on first use (wrapping all ~200 up front cost more than a small model's import)."""

    def __init__(self, table: dict, wrap):
        super().__init__(table)
        self._wrap = wrap
        self._wrapped: dict = {}

    def __getitem__(self, opcode):
        fn = self._wrapped.get(opcode)
        if fn is None:
            fn = self._wrapped[opcode] = self._wrap(opcode, dict.__getitem__(self, opcode))
        return fn

    def get(self, opcode, default=None):
        return self[opcode] if opcode in self else default

    def values(self):
        return [self[k] for k in self]

    def items(self):
        return [(k, self[k]) for k in self]


class TfliteRecorder(Recorder):
    """The recorder of a TFLite import: failures name the TFLite operator."""

    def operator_error(self, err: Exception) -> ModelError:
        return _operator_error(self.model, self.model.layers[self.current], err)


class SpanFillingConverter(tfl.OperatorConverter):
    """``OperatorConverter`` that records, per binding, the TFLite operator it came from."""

    recorder: Recorder | None = None  # set per import by ``import_tflite``

    def __init__(self, model, subgraph, exp_tab, ctx, conversion_state=None):
        super().__init__(model, subgraph, exp_tab, ctx, conversion_state)
        rec = self._recorder()
        self._sg_index = _subgraph_index(model, subgraph)
        self.convert_map: _WrappedConverters = _WrappedConverters(self.convert_map, self._wrap)
        original_set_expr = exp_tab.set_expr

        def set_expr(name, expr, force_override=False):
            rec.own(expr, rec.current, is_output=True)
            return original_set_expr(name, expr, force_override)

        exp_tab.set_expr = set_expr

    def _recorder(self) -> Recorder:
        rec = type(self).recorder
        assert rec is not None  # set by import_tflite on the subclass it makes
        return rec

    def _wrap(self, opcode, fn):
        @functools.wraps(fn)
        def convert(*args, op, **kwargs):
            rec = self._recorder()
            index = self._op_index(op)
            layer = rec.model.layer(self._sg_index, index)
            rec.current = layer.id
            try:
                ret = fn(*args, op=op, **kwargs)
            except ModelError:
                raise
            except Exception as err:  # noqa: BLE001 - any converter failure names its operator
                raise _operator_error(rec.model, layer, err) from None
            rec.own(ret, layer.id, is_output=True)
            return ret

        return convert

    def _op_index(self, op) -> int:
        if not hasattr(self, "_op_positions"):
            self._op_positions = {
                self.subgraph.Operators(i)._tab.Pos: i for i in range(self.subgraph.OperatorsLength())
            }
        return self._op_positions[op._tab.Pos]

    def convert_op_to_relax(self):
        rec = self._recorder()
        outer = rec.current
        try:
            super().convert_op_to_relax()
        finally:
            rec.current = outer

    def check_unsupported_ops(self):
        """Name the first operator the importer cannot handle (index, opcode, tensor)."""
        try:
            super().check_unsupported_ops()
        except Exception as err:  # noqa: BLE001
            rec = self._recorder()
            raise _first_unsupported(rec.model, self, self._sg_index, err) from None


def _operator_error(model: LoadedModel, layer, err: Exception) -> ModelError:
    if layer.outputs:
        tensor = f"output tensor '{layer.outputs[0].name}'"
    elif layer.inputs:
        tensor = f"input tensor '{layer.inputs[0].name}'"
    else:
        tensor = "no tensors"
    msg = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
    if isinstance(err, (KeyError, IndexError)):
        msg = f"{type(err).__name__}: {msg}"  # a bare key ("-1", "'x'") says nothing alone
    producers = {t.index: lay for lay in model.layers if lay.subgraph == layer.subgraph for t in lay.outputs}
    for t in layer.inputs:
        src = producers.get(t.index)
        if src is not None and src.opcode == "DENSIFY":
            # TVM turns DENSIFY into a constant it keeps aside; converters that read their
            # input's buffer directly (DEQUANTIZE of float16 weights) find no data there.
            msg += (
                f" (its input '{t.name}' is the densified sparse weight made by operator "
                f"{src.op_index} DENSIFY, which TVM's importer does not pass on to {layer.opcode})"
            )
            break
    if model.pinned:
        from tvm_explorer.frontends.tflite.loader import frozen_inputs

        frozen = ", ".join(f"{n} {list(shape)}" for n, shape in frozen_inputs(model).items() if n in model.pinned)
        msg += (
            f" (the inputs are pinned by --input-shape, but the tensor shapes stored inside a TFLite model "
            f"stay those of the converter's example input ({frozen}), and an operator may read them)"
        )
    return ModelError(
        f"{model.path}: operator {layer.op_index} ({layer.opcode}, {tensor}"
        f"{', subgraph ' + str(layer.subgraph) if layer.subgraph else ''}) cannot be imported "
        f"by TVM: {msg}"
    )


def _first_unsupported(model: LoadedModel, conv, sg_index: int, err: Exception) -> ModelError:
    message = " ".join(str(err).split())
    layers = [lay for lay in model.layers if lay.subgraph == sg_index]
    names = {}
    for layer in layers:
        try:
            name = conv.get_op_code_str(conv.subgraph.Operators(layer.op_index))
        except Exception as op_err:  # noqa: BLE001 - custom ops raise here
            return _operator_error(model, layer, op_err)
        if name not in conv.convert_map:
            return _operator_error(model, layer, ValueError(f"{name} is not supported by the TFLite frontend"))
        names[layer.op_index] = name
    # The importer lists the rejected opcodes; blame the first operator of the first one named.
    mentioned = [(message.find(f"'{n}'"), n) for n in set(names.values()) if f"'{n}'" in message]
    if mentioned:
        first = min(mentioned)[1]
        layer = next(lay for lay in layers if names[lay.op_index] == first)
        reason = message.split(". ")[0].split(": The following")[0]
        return _operator_error(model, layer, ValueError(reason))
    return ModelError(f"{model.path}: TVM's TFLite importer rejected the model: {message}")


_IMPORT_LOCK = threading.Lock()


def _relax_shim(recorder: Recorder):
    """``tvm.relax`` as the frontend module sees it, with every BlockBuilder proxied."""

    class BlockBuilder:
        def __new__(cls, *args, **kwargs):
            return StampingBuilder(relax.BlockBuilder(*args, **kwargs), recorder)

        current = staticmethod(relax.BlockBuilder.current)

    shim = types.ModuleType("relax")
    vars(shim).update(__getattr__=lambda name: getattr(relax, name), BlockBuilder=BlockBuilder)
    return shim


def import_tflite(model: LoadedModel, origins: OriginTable | None, *, fill_spans: bool = True):
    """Import ``model`` with TVM's TFLite frontend; with spans, every binding knows its layer.

    Returns the Relax IRModule. Raises ModelError naming the operator on failure.
    """
    shape_dict = {name: tuple(dims) for name, dims in model.pinned.items()} or None
    try:
        if not fill_spans:
            return tfl.from_tflite(model.model, shape_dict=shape_dict)
        recorder = TfliteRecorder(model)
        converter = type("SpanFilling", (SpanFillingConverter,), {"recorder": recorder})
        # The frontend binds through its module-level ``relax`` name; only while we import
        # does that name give out recording builders (stock TVM is never patched globally).
        with _IMPORT_LOCK:
            tfl.relax = _relax_shim(recorder)
            try:
                mod = tfl.from_tflite(model.model, shape_dict=shape_dict, op_converter=converter)
            finally:
                tfl.relax = relax
    except ModelError:
        raise
    except Exception as err:  # noqa: BLE001 - anything else the importer raises
        text = " ".join(str(err).split()) or type(err).__name__
        raise ModelError(f"{model.path}: TVM's TFLite importer failed: {text}") from None
    assert origins is not None  # None only for a plain import (fill_spans=False)
    stamp_module(mod, recorder, origins)
    return mod

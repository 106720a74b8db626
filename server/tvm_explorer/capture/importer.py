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

import tvm
from tvm import relax
from tvm.relax.frontend.tflite import tflite_frontend as tfl

from ..errors import ModelError
from ..model.loader import LoadedModel
from ..provenance import OriginTable
from .spans import handle, origin_span, set_span

# What the Relax normalizer treats as a leaf (never bound to a variable of its own).
_LEAVES = (
    tvm.ir.Var, tvm.ir.Constant, relax.ShapeExpr, tvm.ir.StringImm, relax.ExternFunc,
    tvm.ir.GlobalVar, tvm.ir.Op,
)


_ARG_KIND: dict[type, str] = {}  # argument type -> "tuple" | "leaf" | "bind"


def _arg_kind(arg) -> str:
    if isinstance(arg, relax.Tuple):
        return "tuple"
    return "leaf" if isinstance(arg, _LEAVES) else "bind"


class _Recorder:
    """What the import learned: which operator each binding and each result belongs to."""

    def __init__(self, model: LoadedModel):
        self.model = model
        self.current: int | None = None  # layer id being converted
        self.var_origin: dict[int, tuple[int, bool]] = {}
        self.expr_owner: dict[int, int] = {}
        self.output_exprs: set[int] = set()
        self._keep: list = []  # keeps keyed objects alive so handles stay unique
        self._memo: dict[tuple[int, int], relax.Var] = {}
        self.func_owner: dict[str, int] = {}  # functions built while converting a layer

    def operator_error(self, err: Exception) -> ModelError:
        """The message for a failure while converting the current layer (frontends override)."""
        return _operator_error(self.model, self.model.layers[self.current], err)

    def own(self, expr, layer: int | None, is_output: bool = False) -> None:
        if layer is None or expr is None:
            return
        self._keep.append(expr)
        self.expr_owner.setdefault(handle(expr), layer)
        if is_output:
            self.output_exprs.add(handle(expr))

    def owner_of(self, expr) -> tuple[int, bool] | None:
        key = handle(expr)
        if isinstance(expr, relax.Var) and key in self.var_origin:
            layer, out = self.var_origin[key]
            return layer, out or key in self.output_exprs
        if key in self.expr_owner:
            return self.expr_owner[key], key in self.output_exprs
        return None


class _StampingBuilder:
    """A BlockBuilder proxy that binds nested expressions itself and records each binding."""

    def __init__(self, real: relax.BlockBuilder, recorder: _Recorder):
        self._real = real
        self._rec = recorder

    def __getattr__(self, name):
        return getattr(self._real, name)

    # -- binding nested arguments the way the normalizer does -------------------------------
    def _bind_argument(self, arg):
        kind = _ARG_KIND.get(type(arg))
        if kind is None:
            kind = _ARG_KIND[type(arg)] = _arg_kind(arg)
        if kind == "tuple":
            return self._rebuild(arg)
        if kind == "leaf":
            return arg
        key = (handle(self._real), handle(arg))
        var = self._rec._memo.get(key)
        if var is None:
            var = self._emit(self._rebuild(arg), "", source=arg)
            self._rec._memo[key] = var
            self._rec._keep.append(arg)
        return var

    def _rebuild(self, expr):
        """``expr`` with every nested non-leaf argument bound to a variable."""
        if isinstance(expr, relax.Call):
            original = list(expr.args)
            args = [self._bind_argument(a) for a in original]
            # _bind_argument returns the very object it was given when nothing needed binding
            if all(a is b for a, b in zip(args, original)):
                return expr
            new = relax.Call(expr.op, args, expr.attrs, expr.ty_args, expr.span)
        elif isinstance(expr, relax.Tuple):
            original = list(expr.fields)
            fields = [self._bind_argument(f) for f in original]
            if all(a is b for a, b in zip(fields, original)):
                return expr
            new = relax.Tuple(fields, expr.span)
        elif isinstance(expr, relax.TupleGetItem):
            original = expr.tuple_value
            tup = self._bind_argument(original)
            if tup is original:
                return expr
            new = relax.TupleGetItem(tup, expr.index)
        else:
            return expr
        owner = self._rec.owner_of(expr)
        if owner is not None:
            self._rec.own(new, owner[0], owner[1])
        return new

    def _emit(self, expr, name_hint, source=None, method="emit"):
        var = getattr(self._real, method)(expr, name_hint)
        owner = self._rec.owner_of(source if source is not None else expr)
        if owner is None and source is not None:
            owner = self._rec.owner_of(expr)
        if owner is None and self._rec.current is not None:
            owner = (self._rec.current, False)
        if owner is not None:
            self._rec.var_origin[handle(var)] = owner
            self._rec._keep.append(var)
        return var

    # -- the BlockBuilder methods converters call -------------------------------------------
    def emit(self, expr, name_hint: str = ""):
        expr = self._real._normalize_python_tuple(expr)
        return self._emit(self._rebuild(expr), name_hint, source=expr)

    def emit_output(self, output, name_hint: str = ""):
        output = self._real._normalize_python_tuple(output)
        return self._emit(self._rebuild(output), name_hint, source=output, method="emit_output")

    def match_cast(self, value, struct_info, name_hint: str = ""):
        var = self._real.match_cast(self._rebuild(value), struct_info, name_hint)
        if self._rec.current is not None:
            self._rec.var_origin[handle(var)] = (self._rec.current, False)
            self._rec._keep.append(var)
        return var

    def emit_func_output(self, output, params=None):
        if self._rec.current is not None:
            self._rec.func_owner[self._real._func._name] = self._rec.current
        return self._real.emit_func_output(output, params)

    def normalize(self, expr):
        try:
            rebuilt = self._rebuild(expr)
            out = self._real.normalize(rebuilt)
        except ModelError:
            raise
        except Exception as err:  # noqa: BLE001 - type inference of an operator's result failed
            if self._rec.current is None:
                raise
            raise self._rec.operator_error(err) from None
        owner = self._rec.owner_of(expr)
        if owner is not None:
            self._rec.own(out, owner[0], owner[1])
        return out


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


class SpanFillingConverter(tfl.OperatorConverter):
    """``OperatorConverter`` that records, per binding, the TFLite operator it came from."""

    recorder: _Recorder | None = None  # set per import by ``import_tflite``

    def __init__(self, model, subgraph, exp_tab, ctx, conversion_state=None):
        super().__init__(model, subgraph, exp_tab, ctx, conversion_state)
        rec = type(self).recorder
        self._sg_index = _subgraph_index(model, subgraph)
        self.convert_map = _WrappedConverters(self.convert_map, self._wrap)
        original_set_expr = exp_tab.set_expr

        def set_expr(name, expr, force_override=False):
            rec.own(expr, rec.current, is_output=True)
            return original_set_expr(name, expr, force_override)

        exp_tab.set_expr = set_expr

    def _wrap(self, opcode, fn):
        @functools.wraps(fn)
        def convert(*args, op, **kwargs):
            rec = type(self).recorder
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
        rec = type(self).recorder
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
            rec = type(self).recorder
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
    producers = {t.index: lay for lay in model.layers if lay.subgraph == layer.subgraph
                 for t in lay.outputs}
    for t in layer.inputs:
        src = producers.get(t.index)
        if src is not None and src.opcode == "DENSIFY":
            # TVM turns DENSIFY into a constant it keeps aside; converters that read their
            # input's buffer directly (DEQUANTIZE of float16 weights) find no data there.
            msg += (f" (its input '{t.name}' is the densified sparse weight made by operator "
                    f"{src.op_index} DENSIFY, which TVM's importer does not pass on to {layer.opcode})")
            break
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


def _relax_shim(recorder: _Recorder):
    """``tvm.relax`` as the frontend module sees it, with every BlockBuilder proxied."""

    class BlockBuilder:
        def __new__(cls, *args, **kwargs):
            return _StampingBuilder(relax.BlockBuilder(*args, **kwargs), recorder)

        current = staticmethod(relax.BlockBuilder.current)

    shim = types.ModuleType("relax")
    shim.__getattr__ = lambda name: getattr(relax, name)
    shim.BlockBuilder = BlockBuilder
    return shim


def import_tflite(model: LoadedModel, origins: OriginTable | None, *, fill_spans: bool = True):
    """Import ``model`` with TVM's TFLite frontend; with spans, every binding knows its layer.

    Returns the Relax IRModule. Raises ModelError naming the operator on failure.
    """
    try:
        if not fill_spans:
            return tfl.from_tflite(model.model)
        recorder = _Recorder(model)
        converter = type("SpanFilling", (SpanFillingConverter,), {"recorder": recorder})
        # The frontend binds through its module-level ``relax`` name; only while we import
        # does that name give out recording builders (stock TVM is never patched globally).
        with _IMPORT_LOCK:
            tfl.relax = _relax_shim(recorder)
            try:
                mod = tfl.from_tflite(model.model, op_converter=converter)
            finally:
                tfl.relax = relax
    except ModelError:
        raise
    except Exception as err:  # noqa: BLE001 - anything else the importer raises
        text = " ".join(str(err).split()) or type(err).__name__
        raise ModelError(f"{model.path}: TVM's TFLite importer failed: {text}") from None
    _stamp_module(mod, recorder, origins)
    return mod


def _stamp_module(mod, recorder: _Recorder, origins: OriginTable) -> None:
    """Put the recorded origins on every binding, its variable and its value as spans."""
    for gv, func in mod.functions.items():
        if not isinstance(func, relax.Function):
            continue
        bindings = [(b, b.var, b.value) for block in func.body.blocks for b in block.bindings]
        found: list[list[tuple[int, bool]]] = []
        for _b, var, value in bindings:
            owner = recorder.owner_of(var) or recorder.owner_of(value)
            if owner is not None:
                found.append([owner])
            elif isinstance(value, relax.Tuple):
                # A tuple of results (e.g. a graph's outputs) serves every layer it gathers.
                parts = (recorder.owner_of(f) for f in value.fields)
                found.append([(p[0], False) for p in parts if p])
            else:
                found.append([])
        # Bindings no converter claimed (builder plumbing) belong to the layer they feed.
        nxt: list = []
        for i in range(len(found) - 1, -1, -1):
            if not found[i]:
                found[i] = [(layer, False) for layer, _ in nxt]
            else:
                nxt = found[i]
        # Trailing plumbing (a function's result) belongs to what precedes it, or to the
        # layer whose conversion built the function (WHILE/IF lowering).
        prev: list = []
        if gv.name_hint in recorder.func_owner:
            prev = [(recorder.func_owner[gv.name_hint], False)]
        for i, owner in enumerate(found):
            if not owner:
                found[i] = [(layer, False) for layer, _ in prev]
            else:
                prev = owner
        for (b, var, value), owner in zip(bindings, found):
            if not owner:
                continue
            span = origin_span(origins.intern(owner))
            set_span(b, span)
            set_span(var, span)
            if not isinstance(value, _LEAVES):
                set_span(value, span)

"""Stamping a Relax import with provenance, shared by every frontend: a ``Recorder`` learns,
while TVM's own importer converts one operator/node at a time, which operator each binding
and each result belongs to; a ``StampingBuilder`` stands in front of the importer's
BlockBuilder and binds nested arguments itself (as the normalizer would, same order, same
memo) so that every binding is seen; ``stamp_module`` then puts the recorded origins on the
imported module as spans. The emitted IR is the stock IR plus spans.
"""

from __future__ import annotations

import tvm
from tvm import relax

from tvm_explorer.errors import ModelError
from tvm_explorer.provenance import OriginTable
from tvm_explorer.provenance.spans import handle, origin_span, set_span

# What the Relax normalizer treats as a leaf (never bound to a variable of its own).
LEAVES = (
    tvm.ir.Var,
    tvm.ir.Constant,
    relax.ShapeExpr,
    tvm.ir.StringImm,
    relax.ExternFunc,
    tvm.ir.GlobalVar,
    tvm.ir.Op,
)


_ARG_KIND: dict[type, str] = {}  # argument type -> "tuple" | "leaf" | "bind"


def _arg_kind(arg) -> str:
    if isinstance(arg, relax.Tuple):
        return "tuple"
    return "leaf" if isinstance(arg, LEAVES) else "bind"


class Recorder:
    """What the import learned: which operator each binding and each result belongs to."""

    def __init__(self, model):
        self.model = model
        self.current: int | None = None  # layer id being converted
        self.abandoned: int | None = None  # the layer an importer's failing loop left (recording.walk_nodes)
        self.var_origin: dict[int, tuple[int, bool]] = {}
        self.expr_owner: dict[int, int] = {}
        self.output_exprs: set[int] = set()
        self._keep: list = []  # keeps keyed objects alive so handles stay unique
        self._memo: dict[tuple[int, int], relax.Var] = {}
        self.func_owner: dict[str, int] = {}  # functions built while converting a layer

    def operator_error(self, err: Exception) -> ModelError:
        """The message for a failure while converting the current layer (each frontend names
        its operators/nodes its own way)."""
        raise NotImplementedError

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


class StampingBuilder:
    """A BlockBuilder proxy that binds nested expressions itself and records each binding."""

    def __init__(self, real: relax.BlockBuilder, recorder: Recorder):
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


def stamp_module(mod, recorder: Recorder, origins: OriginTable) -> None:
    """Put the recorded origins on every binding, its variable and its value as spans."""
    for gv, func in mod.functions.items():
        if not isinstance(func, relax.Function):
            continue
        bindings = [(b, b.var, b.value) for block in func.body.blocks for b in block.bindings]
        found: list[list[tuple[int, bool]]] = []
        for _b, var, value in bindings:
            owned = recorder.owner_of(var) or recorder.owner_of(value)
            if owned is not None:
                found.append([owned])
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
            if not isinstance(value, LEAVES):
                set_span(value, span)

"""The memory plan of a Relax function as TVM compiled it: every storage, every tensor placed in
it, the kernel calls in order, and when each allocation is released.

Read from TVM's IR objects (not text) after ``StaticPlanBlockMemory`` and ``KillAfterLastUse``:
``alloc_storage`` holds memory, ``alloc_tensor`` places a tensor in a storage, ``kill_*``
drops a reference. A storage's memory is held while anything refers to it: its own variable
until it is killed, and every tensor placed in it (and every view of one: a reshape shares
its input's storage) until each is killed; the function's result outlives the call. The same
walk reads the lowered forms (``R.vm.*``, ``R.builtin.alloc_tensor``), so a module from any
later pass, or of a user's pipeline, gives the same plan.

Positions are binding indices in the function; a *step* is a binding that calls something
(a kernel, a builtin that computes, another function). Memory released by a kill at position
``r`` is held at every step before ``r``.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import tvm
from tvm import relax, tirx

from tvm_explorer.provenance.spans import handle, read_span

_ALLOC_STORAGE = {"relax.memory.alloc_storage", "relax.vm.alloc_storage"}
_ALLOC_TENSOR = {"relax.memory.alloc_tensor", "relax.vm.alloc_tensor"}
_OWN_ALLOC = {"relax.builtin.alloc_tensor"}
_KILLS = {"relax.memory.kill_storage", "relax.memory.kill_tensor", "relax.vm.kill_object"}
_VIEW_OPS = {"relax.reshape", "relax.memory.view", "relax.memory.ensure_zero_offset"}
_VIEW_BUILTINS = {"vm.builtin.reshape"}
# Calls that check or describe, compute nothing and allocate nothing worth a step.
_BOOKKEEPING = {
    "relax.null_value",
    "vm.builtin.check_tensor_info",
    "vm.builtin.check_shape_info",
    "vm.builtin.check_prim_value_info",
    "vm.builtin.check_tuple_info",
    "vm.builtin.check_func_info",
    "vm.builtin.match_shape",
    "vm.builtin.match_prim_value",
    "vm.builtin.make_shape",
    "vm.builtin.make_prim_value",
    "vm.builtin.null_value",
}
END = 1 << 62  # "released when the function returns, or never (its result)"


@dataclass
class Storage:
    """One allocation of memory."""

    id: int
    var: str  # the variable bound to it (for a tensor allocated on its own: the tensor's)
    ordinal: int  # the how-many-th binding of that variable name in the function (0-based)
    position: int
    bytes: int | None  # None: a symbolic size without a bound
    size: str  # the size as TVM wrote it ("576", "64 * N")
    scope: str
    kind: str  # "planned" (alloc_storage), "own" (a tensor allocated alone), "returned" (a call's result)
    origin_set: int
    released: int = END
    tensors: list[int] = field(default_factory=list)
    returned_by: str | None = None  # kind "returned": the call that allocated it


@dataclass
class Tensor:
    """One tensor placed in a storage (or allocated on its own)."""

    id: int
    var: str
    ordinal: int
    position: int
    shape: list  # ints, or the symbolic dimension as text
    dtype: str
    bytes: int | None
    storage: int
    offset: int
    origin_set: int
    released: int = END
    output: bool = False  # the function's result (held by the caller)
    uses: list[int] = field(default_factory=list)  # step indices reading or writing it
    views: list[dict] = field(default_factory=list)  # {"var", "step", "origin_set"}


@dataclass
class Step:
    """One call of the function, in order."""

    index: int
    position: int
    callee: str  # kernel (PrimFunc) name, builtin symbol, Relax function or op name
    kind: str  # "kernel" | "builtin" | "function" | "view"
    origin_set: int
    var: str
    ordinal: int


@dataclass
class Resident:
    """Memory held for the whole call: the inputs (the caller's) and the constants."""

    name: str
    shape: list
    dtype: str
    bytes: int | None


@dataclass
class Plan:
    """What ``read_plan`` found."""

    function: str
    bindings: int
    storages: list[Storage]
    tensors: list[Tensor]
    steps: list[Step]
    inputs: list[Resident]
    constants: list[Resident]
    symbols: dict[str, int | None]  # symbolic dimension -> its bound (None: unbounded)
    notes: list[str]


def _op_name(call) -> str:
    op = call.op
    if isinstance(op, tvm.ir.Op):
        return str(op.name)
    if isinstance(op, relax.ExternFunc):
        return str(op.global_symbol)
    if isinstance(op, tvm.ir.GlobalVar):
        return str(op.name_hint)
    return ""


_INT_TEXT = re.compile(r"T\.u?int\d+\((-?\d+)\)")


def _text(expr) -> str:
    return _INT_TEXT.sub(r"\1", str(expr))


class _Sizes:
    """Evaluates shape expressions with every symbolic dimension at its bound."""

    def __init__(self, bounds: dict[str, int]):
        self.bounds = bounds
        self.symbols: dict[str, int | None] = {}
        self._analyzer: Any = None  # a tvm.sym.Analyzer, made on first use

    def value(self, expr) -> int | None:
        if isinstance(expr, int):
            return expr
        if isinstance(expr, tirx.IntImm):
            return int(expr.value)
        free = tirx.analysis.undefined_vars(expr)
        missing = False
        for var in free:
            name = str(var.name)
            bound = self.bounds.get(name)
            self.symbols.setdefault(name, bound)
            missing |= bound is None
        if missing:
            return None
        if self._analyzer is None:
            import tvm.sym

            self._analyzer = tvm.sym.Analyzer()
            self._bound: set[str] = set()
        for var in free:
            name = str(var.name)
            if name not in self._bound:
                dtype = str(getattr(var.ty, "dtype", "") or "int64")
                self._analyzer.bind(var, tirx.const(self.bounds[name], dtype))
                self._bound.add(name)
        got = self._analyzer.simplify(expr)
        return int(got.value) if isinstance(got, tirx.IntImm) else None

    def dims(self, values) -> tuple[list, list[int | None]]:
        shown = [int(v.value) if isinstance(v, tirx.IntImm) else _text(v) for v in values]
        return shown, [self.value(v) for v in values]


def _nbytes(dims: Sequence[int | None], dtype: str) -> int | None:
    known = [d for d in dims if d is not None]
    if len(known) < len(dims):
        return None
    t = tvm.runtime.DataType(dtype)
    count = 1
    for d in known:
        count *= int(d)
    return (count * t.bits * t.lanes + 7) // 8


def _dtype_of(expr) -> str:
    value = getattr(expr, "value", None)
    return str(value) if value is not None else str(expr)


def _tensor_type(expr):
    ty = getattr(expr, "ty", None) or getattr(expr, "struct_info", None)
    return ty if hasattr(ty, "dtype") and hasattr(ty, "shape") else None


def _origin(node) -> int:
    got = read_span(node)
    return got[0] if got else 0


def bounds_of(func) -> dict[str, int]:
    """The function's ``tir_var_upper_bound`` attribute, by symbol name."""
    attrs = func.attrs
    got = attrs.get("tir_var_upper_bound") if attrs is not None else None
    out: dict[str, int] = {}
    for name, value in got.items() if got is not None else ():
        out[str(name)] = int(getattr(value, "value", value))
    return out


def read_plan(mod, function: str = "main", bounds: dict[str, int] | None = None) -> Plan:
    """The memory plan of ``mod[function]`` (a Relax IRModule after StaticPlanBlockMemory);
    symbolic dimensions are taken at ``bounds`` (by name; default: the function's
    ``tir_var_upper_bound``)."""
    func = mod[function]
    sizes = _Sizes(bounds_of(func) if bounds is None else bounds)
    notes: list[str] = []
    body = func.body
    bindings = []
    if isinstance(body, relax.SeqExpr):
        for block in body.blocks:
            bindings.extend(block.bindings)
    n = len(bindings)

    storages: list[Storage] = []
    tensors: list[Tensor] = []
    steps: list[Step] = []
    # variable -> (storages it keeps alive, tensors it refers to)
    holds: dict[int, tuple[frozenset[int], frozenset[int]]] = {}
    holders: list[tuple[int, int]] = []  # (variable handle, position bound)
    kills: dict[int, int] = {}  # variable handle -> position of its kill
    names: dict[str, int] = {}

    def ordinal(name: str) -> int:
        k = names.get(name, 0)
        names[name] = k + 1
        return k

    def held(expr) -> tuple[frozenset[int], frozenset[int]]:
        if isinstance(expr, relax.Var):
            return holds.get(handle(expr), (frozenset(), frozenset()))
        if isinstance(expr, relax.Tuple):
            return held_together(expr.fields)
        if isinstance(expr, relax.TupleGetItem):
            return held(expr.tuple_value)
        return frozenset(), frozenset()

    def held_together(exprs) -> tuple[frozenset[int], frozenset[int]]:
        s: set[int] = set()
        t: set[int] = set()
        for expr in exprs:
            a, b = held(expr)
            s |= a
            t |= b
        return frozenset(s), frozenset(t)

    def bind(var, value: tuple[frozenset[int], frozenset[int]], pos: int) -> None:
        holds[handle(var)] = value
        holders.append((handle(var), pos))

    def new_storage(b, pos, nbytes, size, scope, kind, returned_by=None) -> Storage:
        st = Storage(len(storages), b.var.name, -1, pos, nbytes, size, scope, kind, _origin(b), returned_by=returned_by)
        storages.append(st)
        return st

    def new_tensor(b, pos, k: int, storage: Storage, offset: int, ty) -> Tensor:
        shape_values = getattr(getattr(ty, "shape", None), "values", None) if ty is not None else None
        dtype = str(getattr(ty, "dtype", "") or "") if ty is not None else ""
        dims: list[int | None]
        if shape_values is None:
            shown, dims = ["?"], [None]
        else:
            shown, dims = sizes.dims(shape_values)
        t = Tensor(
            len(tensors),
            b.var.name,
            k,
            pos,
            shown,
            dtype,
            _nbytes(dims, dtype) if dtype else None,
            storage.id,
            offset,
            _origin(b),
        )
        tensors.append(t)
        storage.tensors.append(t.id)
        return t

    for pos, b in enumerate(bindings):
        value = b.value
        k = ordinal(b.var.name)  # every binding counts: the index keys them all by name
        if isinstance(b, relax.MatchCast) or isinstance(value, (relax.Var, relax.Tuple, relax.TupleGetItem)):
            bind(b.var, held(value), pos)
            continue
        if isinstance(value, relax.If):
            notes.append(f"{b.var.name}: a branch (R.If): the memory of its branches is not counted")
            continue
        if not isinstance(value, relax.Call):
            continue
        name = _op_name(value)
        if name in _ALLOC_STORAGE:
            size_expr = value.args[0]
            shape = list(getattr(size_expr, "values", None) or ())
            shown, dims = sizes.dims(shape)
            if name == "relax.vm.alloc_storage":  # a shape of elements of the dtype hint
                nbytes = _nbytes(dims, _dtype_of(value.args[2]))
                scope = str(getattr(value.args[3], "value", "global"))
            else:  # relax.memory.alloc_storage: the size in bytes
                nbytes = _nbytes(dims, "uint8")
                scope = str(getattr(value.args[2], "value", "global"))
            st = new_storage(b, pos, nbytes, " * ".join(map(str, shown)), scope, "planned")
            st.ordinal = k
            bind(b.var, (frozenset({st.id}), frozenset()), pos)
        elif name in _ALLOC_TENSOR:
            base, _ = held(value.args[0])
            offset = getattr(value.args[1], "value", 0)
            if not base:
                notes.append(f"{b.var.name}: a tensor in a storage the walk does not know")
                continue
            sid = min(base)
            t = new_tensor(b, pos, k, storages[sid], int(offset) if isinstance(offset, int) else 0, _tensor_type(b.var))
            bind(b.var, (frozenset({sid}), frozenset({t.id})), pos)
        elif name in _OWN_ALLOC:
            ty = _tensor_type(b.var)
            st = new_storage(b, pos, None, "", str(getattr(value.args[3], "value", "global")), "own")
            t = new_tensor(b, pos, k, st, 0, ty)
            st.bytes, st.size, st.ordinal = t.bytes, " * ".join(map(str, t.shape)) + f" {t.dtype}", t.ordinal
            bind(b.var, (frozenset({st.id}), frozenset({t.id})), pos)
        elif name in _KILLS:
            for arg in value.args[:1]:
                if isinstance(arg, relax.Var):
                    kills[handle(arg)] = pos
        elif name in _BOOKKEEPING or (name == "relax.call_builtin_with_ctx" and _builtin_name(value) in _BOOKKEEPING):
            continue  # a check or shape bookkeeping: no step
        else:
            step = _step(value, name, mod, len(steps), pos, b, k)
            steps.append(step)
            used_s, used_t = held_together(value.args)
            for tid in used_t:
                tensors[tid].uses.append(step.index)
            ty = _tensor_type(b.var)
            if step.kind == "view":
                for tid in used_t:
                    tensors[tid].views.append({"var": b.var.name, "step": step.index, "origin_set": step.origin_set})
                bind(b.var, (used_s, used_t), pos)
            elif ty is not None:
                # A call that returns a new tensor: the callee allocated it (not planned).
                st = new_storage(b, pos, None, "", "global", "returned", returned_by=step.callee)
                t = new_tensor(b, pos, k, st, 0, ty)
                st.bytes, st.size, st.ordinal = t.bytes, " * ".join(map(str, t.shape)) + f" {t.dtype}", t.ordinal
                t.uses.append(step.index)
                bind(b.var, (frozenset({st.id}), frozenset({t.id})), pos)

    # Who lets go of what, when: a variable holds its storages and tensors from its binding
    # until it is killed, or until the function returns.
    storage_release: dict[int, int] = {}
    tensor_release: dict[int, int] = {}
    for var_handle, _pos in holders:
        released = kills.get(var_handle, END)
        held_s, held_t = holds[var_handle]
        for sid in held_s:
            storage_release[sid] = max(storage_release.get(sid, -1), released)
        for tid in held_t:
            tensor_release[tid] = max(tensor_release.get(tid, -1), released)
    for st in storages:
        st.released = storage_release.get(st.id, END)
    for t in tensors:
        t.released = tensor_release.get(t.id, END)
    _, result = held(body.body) if isinstance(body, relax.SeqExpr) else (frozenset(), frozenset())
    for tid in result:
        tensors[tid].output = True
        tensors[tid].released = END
        storages[tensors[tid].storage].released = END

    inputs = []
    for p in func.params:
        ty = _tensor_type(p)
        values = getattr(getattr(ty, "shape", None), "values", None) if ty is not None else None
        if values is None:
            continue
        shown, dims = sizes.dims(values)
        inputs.append(Resident(p.name, shown, str(ty.dtype), _nbytes(dims, str(ty.dtype))))
    constants = _constants(func)
    return Plan(function, n, storages, tensors, steps, inputs, constants, sizes.symbols, notes)


def _builtin_name(call) -> str:
    first = call.args[0] if call.args else None
    return str(first.global_symbol) if isinstance(first, relax.ExternFunc) else ""


def _step(value, name: str, mod, index: int, pos: int, b, ordinal: int) -> Step:
    op = value.op
    kind = "builtin"
    if isinstance(op, tvm.ir.GlobalVar):
        callee = mod[op] if op in mod.functions else None
        kind = "kernel" if isinstance(callee, tirx.PrimFunc) else "function"
    elif name in _VIEW_OPS or name in _VIEW_BUILTINS:
        kind = "view"
    elif name == "relax.call_builtin_with_ctx":
        name = _builtin_name(value) or name
    return Step(index, pos, name, kind, _origin(b), b.var.name, ordinal)


def _constants(func) -> list[Resident]:
    from tvm_explorer.capture.node_collect import collect

    seen: set[int] = set()
    out: list[Resident] = []
    for c in collect(func, (tvm.ir.GenericConst,), order="pre"):
        value = getattr(c, "value", None)
        if value is None or not hasattr(value, "shape") or not hasattr(value, "dtype"):
            continue  # a data type or another non-tensor constant
        key = handle(value)
        if key in seen:
            continue
        seen.add(key)
        dims = [int(d) for d in value.shape]
        out.append(Resident(f"constant {len(out)}", dims, str(value.dtype), _nbytes(dims, str(value.dtype))))
    return out

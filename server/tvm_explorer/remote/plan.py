"""What a device replays: the steps of a compiled model's ``main``, in order.

The final Relax module is what the VM runs; the VM's per-call hook cannot reach a remote
device (TVM does not pass a local function to a remote one), so the device is driven one
step at a time from here. ``main`` calls kernels (PrimFuncs, destination-passing) on the
model's inputs, constants and tensors allocated for the call, and a few builtins: checks and
allocation bookkeeping (nothing to replay), ``vm.builtin.reshape`` (a view: replayed as a
reshaped copy). Every tensor ``main`` names gets a tensor of its own on the device (storage
sharing is left out: values are the same, and no kernel sees another's output by accident).

Steps (plain data, no TVM objects): ``("value", slot, array)`` an input or constant;
``("empty", slot, shape, dtype)`` a tensor a kernel writes; ``("reshape", slot, source,
shape, symbol)``; ``("call", symbol, args)`` with ``args`` a list of ``("slot", n)`` or
``("int", n)``.
"""

from __future__ import annotations

import numpy as np
import tvm
from tvm import relax, tirx

_SKIPPED = ("vm.builtin.check_tensor_info", "vm.builtin.match_shape", "vm.builtin.null_value")


class ReplayError(ValueError):
    """A step of ``main`` that cannot be replayed on a device (the message names it)."""


def _callee(call, mod) -> tuple[str | None, bool]:
    """``(symbol, is_kernel)`` of a call in ``main``."""
    op = call.op
    if isinstance(op, relax.GlobalVar) and op in mod.functions:
        func = mod[op]
        if isinstance(func, tirx.PrimFunc):
            sym = func.attrs.get("global_symbol") if func.attrs else None
            return (str(sym) if sym else op.name_hint), True
        return op.name_hint, False
    if isinstance(op, relax.ExternFunc):
        return str(op.global_symbol), False
    name = getattr(op, "name", None)
    return (str(name) if name else None), False


def _shape_dtype(expr) -> tuple[tuple[int, ...], str] | None:
    sinfo = getattr(expr, "struct_info", None) or getattr(expr, "ty", None)  # TVM 0.27: ``ty``
    values = getattr(getattr(sinfo, "shape", None), "values", None)
    dtype = str(getattr(sinfo, "dtype", "") or "")
    if values is None or not dtype:
        return None
    try:
        return tuple(int(v) for v in values), dtype
    except TypeError:  # a symbolic dimension
        return None


def replay_steps(mod, arrays: list[np.ndarray]) -> list[tuple]:
    """The steps of ``main`` on ``arrays`` (its inputs, in order); ReplayError naming a step
    that cannot be replayed."""
    main = mod["main"]
    slots: dict = {}
    steps: list[tuple] = []

    def slot_of(expr, what: str) -> tuple:
        if isinstance(expr, relax.Var) and expr in slots:
            return ("slot", slots[expr])
        if isinstance(expr, tvm.ir.Constant):
            value = getattr(expr, "value", None)
            if value is not None and hasattr(value, "numpy"):
                n = len(steps)
                steps.append(("value", n, value.numpy()))
                return ("slot", n)
        if isinstance(getattr(expr, "value", None), tirx.IntImm):  # a PrimValue
            return ("int", int(expr.value.value))
        raise ReplayError(f"{what}: an argument that cannot be replayed ({type(expr).__name__})")

    for param, array in zip(main.params, arrays):
        slots[param] = len(steps)
        steps.append(("value", len(steps), np.asarray(array)))
    body = main.body
    bindings = [b for block in body.blocks for b in block.bindings] if isinstance(body, relax.SeqExpr) else []
    for b in bindings:
        value = b.value
        if isinstance(value, relax.Var):
            if value in slots:
                slots[b.var] = slots[value]
            continue
        if not isinstance(value, relax.Call):
            continue
        symbol, is_kernel = _callee(value, mod)
        if is_kernel:
            steps.append(("call", symbol, [slot_of(a, f"kernel call {symbol}") for a in value.args]))
            continue
        name = symbol or ""
        if name.endswith("alloc_tensor"):
            got = _shape_dtype(b.var)
            if got is None:
                raise ReplayError(f"{b.var.name_hint}: a tensor without a static shape cannot be replayed")
            slots[b.var] = len(steps)
            steps.append(("empty", len(steps), *got))
        elif name == "vm.builtin.reshape":
            got = _shape_dtype(b.var)
            source = slot_of(value.args[0], name)
            if got is None or source[0] != "slot":
                raise ReplayError(f"{b.var.name_hint}: a reshape without a static shape cannot be replayed")
            slots[b.var] = len(steps)
            steps.append(("reshape", len(steps), source[1], got[0], name))
        elif name in _SKIPPED or name.endswith(("alloc_storage", "kill_object", "null_value")):
            continue
        else:
            raise ReplayError(f"{name or type(value.op).__name__}: a call the device replay does not know")
    return steps


def kernel_calls(steps: list[tuple]) -> list[str]:
    """The kernel symbols of the steps, in call order."""
    return [s[1] for s in steps if s[0] == "call"]

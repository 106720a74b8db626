"""The kernel calls of a compiled model's ``main``, in order, with what each is called on:
what a replay of the model needs where the VM's per-call hook cannot reach (a remote device).

The final Relax module is what the VM runs: its ``main`` calls kernels (PrimFuncs) on the
model's inputs, constants and tensors allocated for the call. Each argument is given as the
value itself (an input or a constant: ``numpy`` array), an ``int`` (a scalar), or
``(shape, dtype)`` (an intermediate tensor).
"""

from __future__ import annotations

import numpy as np
import tvm
from tvm import relax, tirx


def _kernel_symbol(call, mod) -> str | None:
    op = call.op
    if not isinstance(op, relax.GlobalVar) or op not in mod.functions:
        return None
    func = mod[op]
    if not isinstance(func, tirx.PrimFunc):
        return None
    sym = func.attrs.get("global_symbol") if func.attrs else None
    return str(sym) if sym else op.name_hint


def _spec(arg, inputs: dict):
    if isinstance(arg, relax.Var) and arg in inputs:
        return inputs[arg]
    if isinstance(arg, tvm.ir.Constant):
        value = getattr(arg, "value", None)
        if hasattr(value, "numpy"):  # a tensor constant (weights)
            return value.numpy()
    if isinstance(getattr(arg, "value", None), tirx.IntImm):  # a PrimValue
        return int(arg.value.value)
    sinfo = getattr(arg, "struct_info", None) or getattr(arg, "ty", None)  # TVM 0.27: ``ty``
    values = getattr(getattr(sinfo, "shape", None), "values", None)
    dtype = str(getattr(sinfo, "dtype", "") or "")
    if values is None or not dtype:
        return None
    try:
        return tuple(int(v) for v in values), dtype
    except TypeError:  # a symbolic dimension
        return None


def kernel_calls(mod, arrays: list[np.ndarray]) -> list[tuple[str, list]]:
    """``[(kernel symbol, argument specs)]`` of ``main`` in call order. Raises ValueError
    naming a call whose arguments cannot be made (a symbolic shape, an opaque argument)."""
    main = mod["main"]
    inputs = dict(zip(main.params, arrays))
    body = main.body
    bindings = [b for block in body.blocks for b in block.bindings] if isinstance(body, relax.SeqExpr) else []
    calls = []
    for b in bindings:
        value = b.value
        symbol = _kernel_symbol(value, mod) if isinstance(value, relax.Call) else None
        if symbol is None:
            continue
        specs = [_spec(a, inputs) for a in value.args]
        if any(s is None for s in specs):
            raise ValueError(f"kernel call {symbol}: an argument without a static shape cannot be replayed")
        calls.append((symbol, specs))
    return calls

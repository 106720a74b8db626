"""Which kernel call produces each layer's output, and catching those outputs while the
compiled model runs.

The last Relax module of a compile is what the VM executes: its ``main`` calls kernels
(PrimFuncs, destination-passing: outputs are the trailing arguments allocated just for the
call) and a few value-returning builtins (``vm.builtin.reshape``). The provenance tracker
stamped every binding with its origin set; a layer whose ``is_output`` mark sits on a call
has its output at that call's boundary — unless fusion put several layers into one kernel:
then only the layers whose outputs leave the kernel (no other layer of the same kernel reads
them) are observable there, the others are hidden inside it.

``relax.VirtualMachine.set_instrument`` calls us after each call with its arguments; the
k-th runtime call of a symbol is the k-th static call of it in ``main`` (no control flow in
a TFLite main; if counts disagree, that symbol's observations are dropped, never guessed).
Outputs are copied at once: memory planning reuses their storage for later kernels.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import tvm
from tvm import relax

from tvm_explorer.capture.tracker import is_allocation
from tvm_explorer.frontends.model import Layer, Model
from tvm_explorer.provenance import OriginTable
from tvm_explorer.provenance.spans import read_span


@dataclass(frozen=True)
class Slot:
    """One observed layer output: where it is among a call's results."""

    layer: int
    output: int  # index into the layer's output tensors
    arg: int | None  # argument index of a destination-passing output; None: the return value
    # The result is the layer's quantized output dequantized: (scale, zero point, dtype) to
    # read it back with (``_dequantized``).
    dequantized: tuple[float, int, str] | None = None


@dataclass
class KernelPlan:
    """Static map from kernel calls of ``main`` to the layer outputs they hold."""

    watches: dict[tuple[str, int], list[Slot]] = field(default_factory=dict)
    counts: dict[str, int] = field(default_factory=dict)
    kernel_of: dict[int, str] = field(default_factory=dict)  # layer -> kernel where it is seen
    hidden_in: dict[int, str] = field(default_factory=dict)  # layer -> kernel hiding its output


def _symbol(call, mod) -> str | None:
    op = call.op
    if isinstance(op, relax.GlobalVar):
        func = mod[op] if op in mod.functions else None
        sym = func.attrs.get("global_symbol") if func is not None and func.attrs else None
        return str(sym) if sym else op.name_hint
    if isinstance(op, relax.ExternFunc):
        return str(op.global_symbol)
    return None


def _main_bindings(main) -> list:
    body = main.body
    if not isinstance(body, relax.SeqExpr):
        return []
    return [b for block in body.blocks for b in block.bindings]


def _numel(shape) -> int:
    n = 1
    for d in shape:
        n *= max(int(d), 1)
    return n


def kernel_plan(mod, origins: OriginTable, model: Model) -> KernelPlan:
    """Map each layer of subgraph 0 to the kernel call whose result holds its output."""
    plan = KernelPlan()
    fresh_allocs: set = set()  # allocated and not yet written
    found: dict[int, tuple[tuple[str, int], list]] = {}
    layers = [lay for lay in model.layers if lay.subgraph == 0]
    for b in _main_bindings(mod["main"]):
        value = b.value
        if is_allocation(value):
            fresh_allocs.add(b.var)
            continue
        if not isinstance(value, relax.Call):
            continue
        sym = _symbol(value, mod)
        if sym is None:
            continue
        k = plan.counts.get(sym, 0)
        plan.counts[sym] = k + 1
        outs = [i for i, a in enumerate(value.args) if isinstance(a, relax.Var) and a in fresh_allocs]
        for i in outs:
            fresh_allocs.discard(value.args[i])
        span = read_span(b)
        if span is None:
            continue
        members = [
            (lid, is_out)
            for lid, is_out in origins.get(span[0])
            if lid < len(model.layers) and model.layers[lid].subgraph == 0
        ]
        marked = [lid for lid, is_out in members if is_out]
        if not marked:
            continue
        slots = _assign(marked, [lid for lid, _ in members], model, value, outs)
        key = (sym, k)
        for lid in marked:
            if any(s.layer == lid for s in slots):
                found[lid] = (key, [s for s in slots if s.layer == lid])
                plan.hidden_in.pop(lid, None)
            elif lid not in found:
                plan.hidden_in[lid] = sym
    for lid, (key, slots) in found.items():
        plan.watches.setdefault(key, []).extend(slots)
        plan.kernel_of[lid] = key[0]
    del layers
    return plan


def _assign(marked: list[int], members: list[int], model: Model, call, outs: list[int]) -> list[Slot]:
    """Pair the call's results with the outputs of the layers whose results leave it.

    A layer's output stays inside the kernel when another layer with work in the same
    kernel (its output, or only a part of it: a quantized layer's input dequantize) reads it.
    """
    consumed = {t.name for lid in members for t in model.layers[lid].inputs}
    sinks = [
        lid
        for lid in sorted(marked, key=lambda i: model.layers[i].op_index)
        if not any(t.name in consumed for t in model.layers[lid].outputs)
    ]
    wanted = [(lid, j, t) for lid in sinks for j, t in enumerate(model.layers[lid].outputs)]
    if not outs:  # a value-returning call: one result
        if len(wanted) == 1 and _fits(_arg_kind(call), wanted[0][2]):
            lid, j, _t = wanted[0]
            return [Slot(lid, j, None)]
        return []
    kinds = [_arg_kind(call.args[i]) for i in outs]
    if len(wanted) == len(outs) and all(_fits(kind, t) for kind, (_l, _j, t) in zip(kinds, wanted)):
        return [Slot(lid, j, outs[k]) for k, (lid, j, _t) in enumerate(wanted)]
    if not wanted:
        return _dequantized(marked, model, kinds, outs)
    # Pair by size and dtype where that is unambiguous both ways: one result fitting one
    # tensor (an ONNX Dropout's output and float mask both fit its kernel's only result).
    hits = {(lid, j): [k for k, kind in enumerate(kinds) if _fits(kind, t)] for lid, j, t in wanted}
    claims: dict[int, int] = {}
    for found in hits.values():
        for k in found:
            claims[k] = claims.get(k, 0) + 1
    return [
        Slot(lid, j, outs[found[0]]) for (lid, j), found in hits.items() if len(found) == 1 and claims[found[0]] == 1
    ]


def _dequantized(marked: list[int], model: Model, kinds, outs: list[int]) -> list[Slot]:
    """A quantized layer whose int8 output the next layer dequantizes inside the same kernel
    (``fused_conv2d_add_quantize_dequantize``): the kernel writes ``(q - zp) × scale``, from
    which ``q`` is read back exactly (``requantize``). Only for one marked layer that no other
    marked layer of the kernel reads, one float result of its output's size, and only where
    the values prove to lie on its quantization grid (checked when observed)."""
    reads = {t.name for lid in marked for t in model.layers[lid].inputs}
    last = [lid for lid in marked if not any(t.name in reads for t in model.layers[lid].outputs)]
    if len(last) != 1 or len(model.layers[last[0]].outputs) != 1:
        return []
    tensor = model.layers[last[0]].outputs[0]
    if not (tensor.quantized and tensor.dtype in ("int8", "uint8", "int16") and len(tensor.scales) == 1):
        return []
    fits = [k for k, (numel, dtype) in enumerate(kinds) if dtype == "float32" and numel == _numel(tensor.shape)]
    zero_point = tensor.zero_points[0] if tensor.zero_points else 0
    how = (tensor.scales[0], zero_point, tensor.dtype)
    return [Slot(last[0], 0, outs[fits[0]], dequantized=how)] if len(fits) == 1 else []


def requantize(value: np.ndarray, scale: float, zero_point: int, dtype: str) -> np.ndarray | None:
    """The quantized tensor a kernel wrote dequantized, or None when ``value`` is not on the
    quantization grid (the kernel computed more than the dequantize after the layer)."""
    if scale <= 0:
        return None
    q = value.astype(np.float64) / float(scale) + float(zero_point)
    rounded = np.round(q)
    info = np.iinfo(dtype)
    if not np.all(np.isfinite(q)) or np.max(np.abs(q - rounded), initial=0.0) > 1e-2:
        return None
    if rounded.size and (rounded.min() < info.min or rounded.max() > info.max):
        return None
    return rounded.astype(dtype)


def _arg_kind(expr) -> tuple[int | None, str | None]:
    """``(number of elements, dtype)`` of a tensor-valued expression, where known."""
    sinfo = getattr(expr, "struct_info", None) or getattr(expr, "ty", None)  # TVM 0.27: ``ty``
    dtype = getattr(sinfo, "dtype", None)
    dtype = str(dtype) if dtype is not None and str(dtype) else None
    values = getattr(getattr(sinfo, "shape", None), "values", None)
    try:
        numel = _numel(int(v) for v in values) if values is not None else None
    except TypeError:
        numel = None
    return numel, dtype


def _fits(kind: tuple[int | None, str | None], tensor) -> bool:
    """Can a result of this size and dtype be the layer's output ``tensor``?"""
    numel, dtype = kind
    return (numel is None or numel == _numel(tensor.shape)) and (dtype is None or dtype == tensor.dtype)


@dataclass
class Observation:
    """What one run of the compiled module showed."""

    outputs: dict[tuple[int, int], np.ndarray]  # (layer, output index) -> value
    unmatched: dict[str, tuple[int, int]]  # symbol -> (static calls, runtime calls) that differ
    result: object = None
    # Layers whose output a kernel wrote dequantized, but off their quantization grid (the
    # kernel did more of the next layer's work): not comparable.
    off_grid: set = field(default_factory=set)
    device: dict | None = None  # the remote device the model ran on (None: here)


class Observer:
    """Copies every planned layer output as the calls of one run come by (from the VM's hook
    here, or from a replay on a remote device), then gives the ``Observation``."""

    def __init__(self, plan: KernelPlan):
        self.plan = plan
        self.seen: dict[str, int] = {}
        self.pending: dict[tuple[str, int], list] = {}

    def after_call(self, symbol: str, ret_value, args) -> None:
        """One call has run: ``ret_value`` and ``args`` are its result and arguments (TVM
        tensors, here or on a device)."""
        k = self.seen.get(symbol, 0)
        self.seen[symbol] = k + 1
        slots = self.plan.watches.get((symbol, k))
        if slots:
            got = []
            for s in slots:
                src = ret_value if s.arg is None else args[s.arg]
                got.append((s, np.array(src.numpy(), copy=True) if hasattr(src, "numpy") else None))
            self.pending[(symbol, k)] = got

    def observation(self, result=None) -> Observation:
        plan, seen = self.plan, self.seen
        unmatched = {sym: (n, seen.get(sym, 0)) for sym, n in plan.counts.items() if seen.get(sym, 0) != n}
        outputs, off_grid = {}, set()
        for (symbol, _k), got in self.pending.items():
            if symbol in unmatched:
                continue
            for s, value in got:
                if value is not None and s.dequantized:
                    value = requantize(value, *s.dequantized)
                    if value is None:
                        off_grid.add(s.layer)
                if value is not None:
                    outputs[(s.layer, s.output)] = value
        return Observation(outputs, unmatched, result, off_grid)


def run_observed(vm_module, plan: KernelPlan, inputs: list[np.ndarray], device) -> Observation:
    """Run ``main`` on ``inputs`` and copy every planned layer output as it is produced."""
    vm = relax.VirtualMachine(vm_module, device)
    observer = Observer(plan)

    def instrument(func, symbol, before_run, ret_value, *args):  # noqa: ARG001 - VM signature
        if not before_run:
            observer.after_call(str(symbol), ret_value, args)
        return 0

    vm.set_instrument(instrument)
    args = [tvm.runtime.tensor(x, device) for x in inputs]
    result = vm["main"](*args)
    return observer.observation(result)


def layer_label(layer: Layer) -> str:
    """``op 3 CONV_2D`` (for messages)."""
    return layer.label

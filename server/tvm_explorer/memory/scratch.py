"""Each kernel's own scratch memory, read from the final TIR (after ``LowerTVMBuiltin``).

A kernel's intermediate buffers (a padded input, an accumulator) become either calls of
``TVMBackendAllocWorkspace`` (heap: TVM's per-thread workspace pool on CPU; device memory on a
GPU), freed by ``TVMBackendFreeWorkspace`` before the kernel returns, or, when small and of a
constant size (under 1 KiB on CPU), buffers on the thread's stack (``AllocBuffer`` left in
the final TIR). The allocations and frees are kept in program order: that order is what TVM's
workspace pool sees (``allocators.py``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import tvm
from tvm import tirx

from tvm_explorer.capture.node_collect import collect
from tvm_explorer.provenance.spans import handle

_ALLOC = "tirx.TVMBackendAllocWorkspace"
_FREE = "tirx.TVMBackendFreeWorkspace"


@dataclass
class Scratch:
    """One kernel's scratch."""

    name: str
    events: list[tuple[str, int | None, str]] = field(default_factory=list)
    """``("alloc", bytes, buffer)`` / ``("free", None, buffer)`` in program order."""
    stack_bytes: int = 0
    buffers: list[dict] = field(default_factory=list)  # {"name", "bytes", "where": "heap"|"stack"|a GPU scope}
    per_thread: bool = False  # a workspace allocated inside a parallel loop: once per thread
    device_type: int | None = None

    @property
    def workspace_bytes(self) -> int | None:
        """The most heap scratch the kernel holds at once (None: a size unknown)."""
        held = peak = 0
        sizes: dict[str, int] = {}
        for what, nbytes, name in self.events:
            if what == "alloc":
                if nbytes is None:
                    return None
                sizes[name] = nbytes
                held += nbytes
                peak = max(peak, held)
            else:
                held -= sizes.pop(name, 0)
        return peak


def _call_name(call) -> str:
    op = getattr(call, "op", None)
    return str(op.name) if isinstance(op, tvm.ir.Op) else ""


def _bytes_of(expr) -> int | None:
    return int(expr.value) if isinstance(expr, tirx.IntImm) else None


def _buffer_bytes(buf) -> int | None:
    count = 1
    for d in buf.shape:
        if not isinstance(d, tirx.IntImm):
            return None
        count *= int(d.value)
    t = tvm.runtime.DataType(str(buf.dtype))
    return (count * t.bits * t.lanes + 7) // 8


def kernel_scratch(func, name: str, bounds: dict[str, int] | None = None) -> Scratch:
    """The scratch of one PrimFunc of the final TIR; a size that depends on a symbolic
    dimension is taken at its bound in ``bounds`` (by name), else left unknown."""
    out = Scratch(name)
    parallel: set[int] = set()
    for loop in collect(func, (tirx.For,), order="pre"):
        if int(loop.kind) == int(tirx.ForKind.PARALLEL):
            parallel.update(handle(c) for c in collect(loop, (tvm.ir.Call,)) if _call_name(c) == _ALLOC)
    sizes = _SymbolicSizes(func, bounds or {})
    declared: set[int] = set()
    for node in collect(func, (tirx.DeclBuffer, tvm.ir.Call, tirx.AllocBuffer), order="pre"):
        if isinstance(node, tirx.DeclBuffer):
            data = node.data
            if isinstance(data, tvm.ir.Call) and _call_name(data) == _ALLOC:
                declared.add(handle(data))
                _alloc(out, data, str(node.buffer.name), handle(data) in parallel, sizes)
        elif isinstance(node, tirx.AllocBuffer):
            buf = node.buffer
            nbytes = _buffer_bytes(buf)
            scope = _scope(buf)
            if scope == "global":  # left on the (CPU) thread's stack by LowerTVMBuiltin
                out.stack_bytes += nbytes or 0
            out.buffers.append(
                {"name": str(buf.name), "bytes": nbytes, "where": "stack" if scope == "global" else scope}
            )
        else:
            what = _call_name(node)
            if what == _ALLOC and handle(node) not in declared:
                _alloc(out, node, f"workspace {len(out.buffers)}", handle(node) in parallel, sizes)
            elif what == _FREE and len(node.args) > 2:
                out.events.append(("free", None, _freed_name(node.args[2])))
    return out


def _scope(buf) -> str:
    """A buffer's storage scope (``global``; on a GPU ``shared``, ``local``: on chip)."""
    try:
        return str(buf.scope()) or "global"
    except Exception:  # noqa: BLE001 - a buffer without a scope: the default
        return "global"


def _freed_name(ptr) -> str:
    """The buffer a ``TVMBackendFreeWorkspace`` frees (``buffer_data(X)``: X's name)."""
    if isinstance(ptr, tvm.ir.Call) and ptr.args:
        ptr = ptr.args[0]
    return str(getattr(ptr, "name", ptr))


class _SymbolicSizes:
    """Sizes of a PrimFunc's allocations: a constant, or an expression over the function's
    bound variables (``cse_v1 = N * 16``) evaluated with each symbolic dimension at its
    bound."""

    def __init__(self, func, bounds: dict[str, int]):
        self.func = func
        self.bounds = bounds
        self._analyzer: Any = None  # a tvm.sym.Analyzer, made on first use

    def value(self, expr) -> int | None:
        if isinstance(expr, tirx.IntImm):
            return int(expr.value)
        if not self.bounds:
            return None
        if self._analyzer is None:
            import tvm.sym

            self._analyzer = tvm.sym.Analyzer()
            for bind in collect(self.func, (tirx.Bind,), order="pre"):
                var = bind.var
                dtype = str(getattr(var.ty, "dtype", "") or "")
                if not dtype.startswith(("int", "uint")):
                    continue
                bound = self.bounds.get(str(var.name))
                try:
                    if bound is not None:
                        self._analyzer.bind(var, tirx.const(bound, dtype))
                    else:
                        self._analyzer.bind(var, bind.value)
                except Exception:  # noqa: BLE001 - a value the analyzer cannot take: left unknown
                    continue
        got = self._analyzer.simplify(expr)
        return int(got.value) if isinstance(got, tirx.IntImm) else None


def _alloc(out: Scratch, call, name: str, per_thread: bool, sizes: _SymbolicSizes) -> None:
    nbytes = sizes.value(call.args[2]) if len(call.args) > 2 else None
    if out.device_type is None and call.args:
        out.device_type = _bytes_of(call.args[0])
    out.events.append(("alloc", nbytes, name))
    out.buffers.append({"name": name, "bytes": nbytes, "where": "heap"})
    out.per_thread |= per_thread


def module_scratch(mod, bounds: dict[str, int] | None = None) -> dict[str, Scratch]:
    """Every PrimFunc's scratch in the final TIR module, by PrimFunc name (the name the
    Relax function calls it by)."""
    out: dict[str, Scratch] = {}
    for gv, func in mod.functions.items():
        if isinstance(func, tirx.PrimFunc):
            got = kernel_scratch(func, gv.name_hint, bounds)
            if got.events or got.buffers:
                out[gv.name_hint] = got
    # A GPU kernel is a device function ``<name>_kernel`` launched by the host function the
    # Relax function calls: its on-chip buffers (shared, local) are listed under that name.
    for name in [n for n in out if n.endswith("_kernel")]:
        device = out.pop(name)
        host = out.setdefault(name[: -len("_kernel")], Scratch(name[: -len("_kernel")]))
        host.buffers.extend(device.buffers)
        host.events.extend(device.events)
        host.stack_bytes += device.stack_bytes
        host.per_thread |= device.per_thread
    return out

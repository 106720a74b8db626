"""The step-by-step memory timeline of a plan: bytes held at every call, the peak, which layers'
tensors share each storage, and what TVM's allocators should hold (``allocators.py``).

Works on the plain data of ``plan.py`` and ``scratch.py`` (no TVM), so that it can be checked
against figures computed by hand.
"""

from __future__ import annotations

import bisect
from collections.abc import Callable

from tvm_explorer.bundle.sections.memory import MemoryTensor
from tvm_explorer.memory.allocators import PooledAllocator, WorkspacePool
from tvm_explorer.memory.plan import END, Plan, Storage, Tensor
from tvm_explorer.memory.scratch import Scratch

Origins = Callable[[int], list[tuple[int, bool]]]
"""The layers of an origin set: ``[(layer_id, is_output), ...]``."""


def _held_steps(positions: list[int], position: int, released: int) -> tuple[int | None, int | None, bool]:
    """First and last step (inclusive) during which something allocated at ``position`` and
    released after binding ``released`` is held (``positions``: each step's binding, in
    order), and whether it is still held after the last step (the result, or something never
    killed)."""
    first = bisect.bisect_right(positions, position)
    last = bisect.bisect_left(positions, released) - 1
    if first > last:
        return None, None, released == END
    return first, last, released == END


def _primary_layer(
    t: Tensor, origins: list[tuple[int, bool]], outputs: dict[int, list[tuple[list, str]]]
) -> int | None:
    """The layer whose output the tensor is: among the layers of the call that writes it, the
    last one producing an output of the tensor's shape and dtype, else the last producing any."""
    producing = [lid for lid, out in origins if out] or [lid for lid, _ in origins]
    matching = [
        lid
        for lid in producing
        if any(list(shape) == list(t.shape) and dtype == t.dtype for shape, dtype in outputs.get(lid, ()))
    ]
    pick = matching or producing
    return max(pick) if pick else None


def build(
    plan: Plan,
    scratch: dict[str, Scratch],
    origins: Origins,
    outputs: dict[int, list[tuple[list, str]]],
) -> dict:
    """``storages``, ``tensors``, ``steps``, ``kernels``, ``peak`` and ``predicted`` of
    ``memory.json`` (docs/bundle-format.md)."""

    def layers(sid: int) -> list[int]:
        return sorted({lid for lid, _ in origins(sid)}) if sid else []

    steps_by_index = {s.index: s for s in plan.steps}
    positions = [s.position for s in plan.steps]
    tensors: list[MemoryTensor] = []
    for t in plan.tensors:
        first, last, to_end = _held_steps(positions, t.position, t.released)
        uses = sorted(set(t.uses))
        producer = uses[0] if uses else None
        writer = steps_by_index[producer] if producer is not None else None
        layer_set = origins(writer.origin_set) if writer is not None and writer.origin_set else origins(t.origin_set)
        tensors.append(
            {
                "id": t.id,
                "var": t.var,
                "ordinal": t.ordinal,
                "shape": t.shape,
                "dtype": t.dtype,
                "bytes": t.bytes,
                "storage": t.storage,
                "offset": t.offset,
                "layer": _primary_layer(t, layer_set, outputs),
                "layers": sorted({lid for lid, _ in layer_set}),
                "producer": producer,
                "last_use": uses[-1] if uses else None,
                "first_step": first,
                "last_step": last,
                "to_end": to_end,
                "steps_alive": 0 if first is None or last is None else (last - first + 1),
                "output": t.output,
                "views": [{"var": v["var"], "step": v["step"], "layers": layers(v["origin_set"])} for v in t.views],
            }
        )
    storages = []
    for st in plan.storages:
        first, last, to_end = _held_steps(positions, st.position, st.released)
        storages.append(
            {
                "id": st.id,
                "var": st.var,
                "ordinal": st.ordinal,
                "bytes": st.bytes,
                "size": st.size,
                "scope": st.scope,
                "kind": st.kind,
                "first_step": first,
                "last_step": last,
                "to_end": to_end,
                "tensors": list(st.tensors),
                "layers": sorted({lid for tid in st.tensors if (lid := tensors[tid]["layer"]) is not None}),
                "returned_by": st.returned_by,
            }
        )

    kernels = []
    for name in sorted(scratch):
        k = scratch[name]
        kernels.append(
            {
                "name": name,
                "workspace_bytes": k.workspace_bytes,
                "stack_bytes": k.stack_bytes,
                "per_thread": k.per_thread,
                "buffers": k.buffers,
            }
        )

    out_steps, predicted = _replay(plan, scratch, storages, origins)
    peak = _peak(out_steps)
    return {
        "storages": storages,
        "tensors": tensors,
        "steps": out_steps,
        "kernels": kernels,
        "peak": peak,
        "predicted": predicted,
    }


def _replay(plan: Plan, scratch: dict[str, Scratch], storages: list[dict], origins: Origins) -> tuple[list[dict], dict]:
    """Bytes held at every step, as the plan says and as TVM's allocators would hold them."""
    allocs: dict[int, list[Storage]] = {}
    frees: dict[int, list[Storage]] = {}
    for st in plan.storages:
        allocs.setdefault(st.position, []).append(st)
        if st.released != END:
            frees.setdefault(st.released, []).append(st)
    step_at = {s.position: s for s in plan.steps}
    naive_live = 0
    live = 0
    unknown = 0
    pool = WorkspacePool()
    pooled = PooledAllocator()
    naive_peak = 0
    steps = []
    for pos in range(plan.bindings):
        for st in allocs.get(pos, ()):
            if st.bytes is None:
                unknown += 1
                continue
            live += st.bytes
            naive_live += st.bytes
            pooled.alloc(st.bytes)
        step = step_at.get(pos)
        if step is not None:
            k = scratch.get(step.callee) if step.kind == "kernel" else None
            if k is not None:
                pool.run_kernel(k.events)
            workspace = (k.workspace_bytes if k is not None else 0) or 0
            runtime = naive_live + pool.held
            naive_peak = max(naive_peak, runtime)
            steps.append(
                {
                    "index": step.index,
                    "callee": step.callee,
                    "kind": step.kind,
                    "layers": sorted({lid for lid, _ in origins(step.origin_set)}) if step.origin_set else [],
                    "var": step.var,
                    "ordinal": step.ordinal,
                    "live_bytes": live,
                    "scratch_bytes": workspace,
                    "stack_bytes": k.stack_bytes if k is not None else 0,
                    "total_bytes": live + workspace,
                    "runtime_bytes": runtime,
                    "pooled_bytes": pooled.held + pool.held,
                    "unknown": unknown,
                }
            )
        for st in frees.get(pos, ()):
            if st.bytes is None:
                unknown -= 1
                continue
            live -= st.bytes
            naive_live -= st.bytes
            pooled.release(st.bytes)
    predicted = {
        "naive_peak_bytes": naive_peak,
        "pooled_bytes": pooled.held + pool.held,
        "workspace_pool_bytes": pool.held,
    }
    return steps, predicted


def _peak(steps: list[dict]) -> dict:
    best = max(steps, key=lambda s: s["total_bytes"], default=None)
    if best is None:
        return {"step": None, "bytes": 0, "live_bytes": 0, "scratch_bytes": 0, "unknown": 0}
    return {
        "step": best["index"],
        "bytes": best["total_bytes"],
        "live_bytes": best["live_bytes"],
        "scratch_bytes": best["scratch_bytes"],
        "unknown": best["unknown"],
    }

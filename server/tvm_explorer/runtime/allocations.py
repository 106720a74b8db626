"""What a run of a compiled model really allocates on the CPU (``--profile``, docs/memory.md).

TVM 0.27 exposes no allocator statistics to Python (the VM's allocators count their bytes,
but nothing reads them out), so the run is measured from outside: glibc's ``mallinfo2`` gives
the bytes the process has allocated (``uordblks`` in its heaps plus ``hblkhd`` in mapped
chunks; TVM's CPU device allocates every storage and every workspace page with
``posix_memalign``). The VM's per-call hook (``set_instrument``) reads it after every call
the VM makes; the first sample, taken just before the run, is the baseline: the loaded module,
its constants and the inputs are below it.

Two cold runs, each in a fresh thread (TVM's workspace pool is per thread, so no earlier
kernel's pages are counted): one with the VM's ``naive`` allocator (a storage's memory is
freed as soon as its last reference goes: the plan, as the static timeline replays it), one
with its default ``pooled`` allocator (what a deployed model holds). Python objects the hook
creates are small ones, kept by Python's own arenas, not malloc's.
"""

from __future__ import annotations

import ctypes
import threading

CAPACITY = 200_000  # calls recorded per run (a model making more is measured up to here)


class _MallInfo2(ctypes.Structure):
    _fields_ = [
        (name, ctypes.c_size_t)
        for name in (
            "arena",
            "ordblks",
            "smblks",
            "hblks",
            "hblkhd",
            "usmblks",
            "fsmblks",
            "uordblks",
            "fordblks",
            "keepcost",
        )
    ]


def heap_meter():
    """A function returning the bytes malloc has handed out and not taken back, or None where
    the C library has no ``mallinfo2`` (not glibc 2.33 or later)."""
    try:
        libc = ctypes.CDLL(None)
        mallinfo2 = libc.mallinfo2
    except (OSError, AttributeError):
        return None
    mallinfo2.restype = _MallInfo2
    mallinfo2.argtypes = []

    def used() -> int:
        info = mallinfo2()
        return int(info.uordblks + info.hblkhd)

    return used


METHOD = "glibc mallinfo2 (heap bytes in use) after every VM call, above the value just before the run"


def _cold_run(module, arrays, memory_cfg: str, used) -> dict:
    import tvm
    from tvm import relax

    vm = relax.VirtualMachine(module, tvm.cpu(), memory_cfg=memory_cfg)
    args = [tvm.runtime.tensor(a) for a in arrays]
    main = vm["main"]
    samples = [0] * CAPACITY
    symbols: list[str | None] = [None] * CAPACITY
    count = [0]

    def hook(_func, symbol, before, _ret, *_args):
        if not before:
            i = count[0]
            if i < CAPACITY:
                samples[i] = used()
                symbols[i] = symbol
                count[0] = i + 1
        return 0

    vm.set_instrument(hook)
    base = used()
    out = main(*args)
    after = used()
    n = count[0]
    peak = max([base, after, *samples[:n]])
    del out
    return {
        "peak_bytes": peak - base,
        "held_after_bytes": after - base,
        "calls": [[symbols[i], samples[i] - base] for i in range(n)],
        "truncated": n >= CAPACITY,
    }


def measure_allocations(module, arrays) -> dict:
    """Measure two cold runs of ``module``'s ``main`` on ``arrays`` (see the module's doc):
    ``{"status": "measured", "method", "naive": {...}, "pooled": {...}}``, or ``{"status":
    "unavailable" | "failed", "reason"}``."""
    used = heap_meter()
    if used is None:
        return {"status": "unavailable", "reason": "the C library has no mallinfo2 (glibc 2.33 or later is needed)"}
    got: dict = {"status": "measured", "method": METHOD}
    for cfg in ("naive", "pooled"):
        box: dict = {}

        def run(cfg=cfg, box=box):
            try:
                box["result"] = _cold_run(module, arrays, cfg, used)
            except Exception as err:  # noqa: BLE001 - the model failed: said in one line
                box["error"] = " ".join(str(err).split())[:300] or type(err).__name__

        thread = threading.Thread(target=run, name=f"tvm-explorer-memory-{cfg}")
        thread.start()
        thread.join()
        if "error" in box:
            return {"status": "failed", "reason": f"the model failed while its memory was measured: {box['error']}"}
        got[cfg] = box["result"]
    return got

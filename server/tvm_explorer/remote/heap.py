"""What a run of the model allocates on a remote device (``--profile --rpc``, docs/memory.md).

The local measurement (``runtime/allocations.py``) reads glibc's ``mallinfo2`` after every
call the VM makes, through the VM's ``set_instrument`` hook. A TVM RPC server cannot call a
function of this process, so the hook runs on the device: ``heap_meter.c`` is linked into the
kernel library uploaded there; ``tvmx_memory_run(vm, function, inputs...)`` sets its instrument on the
device's VM, runs ``main`` in a fresh thread of the server (TVM's CPU workspace pool is per
thread) and keeps each call's symbol and bytes in use above the value just before the run;
``tvmx_memory_read()`` hands the record back as text. As here, two cold runs: the VM's
``naive`` allocator, then its ``pooled`` one (allocator pools are per process: a stock
``tvm.exec.rpc_server`` serves each session in a fresh process, and the runs come before any
timing). The result has the shape of ``runtime.allocations.measure_allocations``'s.
"""

from __future__ import annotations

import os

SOURCE = os.path.join(os.path.dirname(__file__), "heap_meter.c")
METHOD = (
    "glibc mallinfo2 (heap bytes in use) after every VM call, read on the device by a function "
    "linked into the uploaded library, above the value just before the run"
)
NO_MALLINFO2 = "no mallinfo2"


def link_options() -> list[str]:
    """What the kernel library's link adds: the meter's source and TVM FFI's headers."""
    import tvm_ffi.libinfo

    return [f"-I{tvm_ffi.libinfo.find_include_path()}", SOURCE]


_MOST = 2**53  # bytes a record may claim (what memory.json's reader accepts as an integer)


def _bytes(text: str) -> int:
    value = int(text)
    if abs(value) > _MOST:
        raise ValueError(f"the device's memory record claims {text[:40]} bytes: not a size")
    return value


def parse_record(text: str) -> dict:
    """``{"peak_bytes", "held_after_bytes", "calls", "truncated"}`` of ``tvmx_memory_read``'s
    text; ValueError when it is not such a record (a device that answers something else, or
    sizes no memory.json reader would take)."""
    lines = text.splitlines()
    head = lines[0].split() if lines else []
    if len(head) != 6 or head[0] != "base" or head[2] != "after" or head[4] != "truncated":
        raise ValueError("the device's memory record has no header")
    after = _bytes(head[3])
    calls: list[list] = []
    for line in lines[1:]:
        symbol, sep, used = line.rpartition("\t")
        if not sep:
            raise ValueError(f"the device's memory record has a malformed line: {line[:80]!r}")
        calls.append([symbol, _bytes(used)])
    peak = max([0, after, *(used for _, used in calls)])
    return {"peak_bytes": peak, "held_after_bytes": after, "calls": calls, "truncated": head[5] != "0"}


def measure_remote_allocations(rmodel, rkernels, rdev, inputs, device: str, function: str = "main") -> dict:
    """Two cold runs of ``function`` on the device (see the module's doc): ``{"status": "measured",
    "method", "where", "naive", "pooled"}`` or ``{"status": "unavailable" | "failed", "reason"}``."""
    import tvm
    from tvm import relax

    try:
        run, read = rkernels.get_function("tvmx_memory_run"), rkernels.get_function("tvmx_memory_read")
    except Exception:  # noqa: BLE001 - a library without the meter
        return {"status": "unavailable", "reason": f"the library on {device} has no memory meter (tvmx_memory_run)"}
    got: dict = {"status": "measured", "method": METHOD, "where": device}
    for cfg in ("naive", "pooled"):
        vm = relax.VirtualMachine(rmodel, rdev, memory_cfg=cfg)
        args = [tvm.runtime.tensor(a, rdev) for a in inputs]
        try:
            run(vm.module, function, *args)
            record = bytes(read()).decode("utf-8", "replace")
        except Exception as err:  # noqa: BLE001 - said in one line
            text = " ".join(str(err).split())
            if NO_MALLINFO2 in text:
                return {
                    "status": "unavailable",
                    "reason": f"the C library on {device} has no mallinfo2 (glibc 2.33 or later is needed)",
                }
            return {
                "status": "failed",
                "reason": f"the model failed on {device} while its memory was measured: {text[:300]}",
            }
        try:
            got[cfg] = parse_record(record)
        except ValueError as err:
            return {"status": "failed", "reason": f"{device}: {err}"}
        del vm, args
    return got

"""Measuring a built model on remote devices: build the library for the device, check its
architecture against what each device reports (before uploading), upload, load, and time
every kernel call with the device's own clock through the session (``time_evaluator``), then
whole runs of the model on the device's VM (``time_evaluator("main")``).

The VM's per-call hook (``set_instrument``) cannot be used over RPC (TVM does not pass a
local function to the remote), so the calls are replayed: each kernel call of the model's
``main``, in order, is timed on its own through ``time_evaluator`` of the kernel library,
on arguments of the call's shapes and dtypes — the model's inputs and constants as they are,
intermediate tensors zero-filled. Several devices are measured in parallel, one thread each.
"""

from __future__ import annotations

import os
import tempfile
import threading

import numpy as np

from tvm_explorer.errors import RemoteError
from tvm_explorer.remote.cross import arch_of, elf_arch
from tvm_explorer.remote.devices import Device, open_devices, reason
from tvm_explorer.remote.request import RemoteRequest


def export(
    executable, workdir: str, compiler: str | None, c_source: bool, triple: str | None = None
) -> tuple[str, str]:
    """``(model.so, kernels.so)``: the whole model (for the VM) and its kernel library alone
    (a remote module answers ``time_evaluator`` only for its own functions), linked by
    ``compiler`` (None: the system's) for ``triple`` (where TVM packs the VM's own data into
    an object file of its own: it must be the device's too)."""
    from tvm.support import cc as tvm_cc

    kwargs: dict = {"options": ["-O2"]} if c_source else {}
    if compiler is not None:
        kwargs["fcompile"] = tvm_cc.cross_compiler(compiler, get_target_triple=(lambda: triple) if triple else None)
    model, kernels = os.path.join(workdir, "model.so"), os.path.join(workdir, "kernels.so")
    what = compiler or "the system C compiler"
    try:
        executable.export_library(model, **kwargs)
        executable.mod.imports[0].export_library(kernels, **kwargs)
    except Exception as err:  # noqa: BLE001 - the compiler's verdict, in one line
        raise RemoteError(f"{what} could not build the library for the device: {reason(err)}") from None
    return model, kernels


def check_arch(devices: list[Device], library: str, target: str) -> str | None:
    """The library's architecture; RemoteError if a device reports another one."""
    lib_arch = elf_arch(library)
    for dev in devices:
        dev_arch = arch_of(dev.info.get("triple"))
        if lib_arch and dev_arch and dev_arch != lib_arch:
            raise RemoteError(
                f"{dev.name} is {dev.info['triple']} ({dev.describe()}), but the library was built for {lib_arch} "
                f"(--target {target}): build for the device with --target 'llvm -mtriple={dev.info['triple']}' "
                "(and --cc its C cross compiler if it is not on PATH), or ask for devices of this architecture"
            )
    return lib_arch


def _measure_one(dev: Device, model: str, kernels: str, calls, inputs, repeat: int) -> dict:
    import tvm
    from tvm import relax

    sess = dev.session
    sess.upload(model)
    sess.upload(kernels)
    rmodel = sess.load_module(os.path.basename(model))
    rkernels = sess.load_module(os.path.basename(kernels))
    rdev = sess.cpu(0)
    evaluators: dict[str, object] = {}
    times: list[list[float]] = [[] for _ in range(repeat)]
    symbols = []
    for symbol, args in calls:
        if symbol not in evaluators:
            evaluators[symbol] = rkernels.time_evaluator(symbol, rdev, number=1, repeat=repeat)
        remote_args = [
            a
            if isinstance(a, int)
            else tvm.runtime.tensor(a if isinstance(a, np.ndarray) else np.zeros(a[0], a[1]), rdev)
            for a in args
        ]
        results = evaluators[symbol](*remote_args).results
        symbols.append(symbol)
        for r in range(repeat):
            times[r].append(results[r] * 1e3)
    vm = relax.VirtualMachine(rmodel, rdev)
    plain = vm.time_evaluator("main", rdev, number=1, repeat=repeat)(*[tvm.runtime.tensor(a, rdev) for a in inputs])
    plain_ms = [t * 1e3 for t in plain.results]
    return {
        "symbols": symbols,
        "times": times,
        "plain_ms": plain_ms,
        "wall_ms": [sum(run) for run in times],
        "plain_wall_ms": plain_ms,
        "clock": "device_timer",
    }


def measure_on_devices(
    executable,
    target: str,
    calls,
    inputs,
    repeat: int,
    request: RemoteRequest,
    compiler: str | None,
    triple: str | None = None,
) -> list[tuple[dict, dict]]:
    """``[(device record, measured calls)]`` per device, or RemoteError naming the device or
    key and what to do; never a part of the devices."""
    devices = open_devices(request)
    with tempfile.TemporaryDirectory(prefix="tvm-explorer-remote-") as workdir:
        model, kernels = export(executable, workdir, compiler, target.split()[0] == "c", triple)
        check_arch(devices, model, target)
        results: list[dict | None] = [None] * len(devices)
        failures: list[str | None] = [None] * len(devices)

        def run(i: int, dev: Device) -> None:
            try:
                results[i] = _measure_one(dev, model, kernels, calls, inputs, repeat)
            except Exception as err:  # noqa: BLE001 - said once, naming the device
                failures[i] = f"{dev.name}: {reason(err)}"

        threads = [threading.Thread(target=run, args=(i, d), daemon=True) for i, d in enumerate(devices)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    lost = [f for f in failures if f]
    if lost:
        raise RemoteError(
            f"lost {len(lost)} of {len(devices)} device(s) while measuring ({'; '.join(lost)}); "
            "nothing was recorded and the previous bundle is unchanged: check the device(s) "
            f"({request.where()}) and run again"
        )
    return [(dev.record(), res) for dev, res in zip(devices, results) if res is not None]

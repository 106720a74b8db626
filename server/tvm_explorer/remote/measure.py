"""Running a built model on remote devices: build the library for the device, check its
architecture against what each device reports (before uploading), upload, load, and replay
``main`` there one step at a time (``remote.plan``): to time every kernel call with the
device's own clock through the session (``time_evaluator``; then whole runs of the model on
the device's VM, ``time_evaluator("main")``), or to run the model once and hand every call's
result to the numerics observer. Each call's inputs are what the calls before it computed on
the device. Several devices are measured in parallel, one thread each.
"""

from __future__ import annotations

import math
import os
import tempfile
import threading
import time
from typing import Any

import numpy as np

from tvm_explorer.errors import RemoteError
from tvm_explorer.remote.cross import arch_of, elf_arch
from tvm_explorer.remote.devices import Device, open_devices, reason
from tvm_explorer.remote.heap import link_options, measure_remote_allocations
from tvm_explorer.remote.relay import MAX_PACKET
from tvm_explorer.remote.request import RemoteRequest


def export(
    executable, workdir: str, compiler: str | None, c_source: bool, triple: str | None = None
) -> tuple[str, str]:
    """``(model.so, kernels.so)``: the whole model (for the VM) and its kernel library alone
    (a remote module answers ``time_evaluator`` only for its own functions), linked by
    ``compiler`` (None: the system's) for ``triple`` (where TVM packs the VM's own data into
    an object file of its own: it must be the device's too)."""
    from tvm.support import cc as tvm_cc

    from tvm_explorer.capture.c_source import export_c_library

    options = ["-O2"] if c_source else None
    link = None
    if compiler is not None:
        link = tvm_cc.cross_compiler(compiler, get_target_triple=(lambda: triple) if triple else None)
    model, kernels = os.path.join(workdir, "model.so"), os.path.join(workdir, "kernels.so")
    what = compiler or "the system C compiler"
    try:  # TVM's C with the spellings C lacks defined (capture/c_source.py), as here
        export_c_library(executable, model, options, link)
        # the kernels with the memory meter (remote/heap.py) linked in
        export_c_library(executable.mod.imports[0], kernels, [*(options or []), *link_options()], link)
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


def largest_answer(steps) -> int:
    """The most bytes one answer of a device may hold while replaying ``steps``: a tensor of
    theirs sent back (numerics, reshapes), with room for the packet's header; at least
    MAX_PACKET."""
    largest = 0
    for step in steps:
        if step[0] == "value":
            largest = max(largest, int(np.asarray(step[2]).nbytes))
        elif step[0] in ("empty", "reshape"):
            shape, dtype = (step[2], step[3]) if step[0] == "empty" else (step[3], None)
            count = int(np.prod(shape, dtype=np.int64)) if len(shape) else 1
            largest = max(largest, count * (np.dtype(dtype).itemsize if dtype else 8))
    return max(MAX_PACKET, largest + (1 << 20))


def _replay(dev: Device, kernels_lib, steps, on_call) -> None:
    """Run the steps on the device; ``on_call(symbol, function, ret, args)`` for every kernel
    call (``function`` None: a builtin already replayed, ``ret`` its result)."""
    import tvm

    rdev = dev.session.cpu(0)
    env: dict[int, Any] = {}  # slot -> a tvm.runtime.Tensor on the device
    functions: dict[str, object] = {}
    for step in steps:
        kind = step[0]
        if kind == "value":
            env[step[1]] = tvm.runtime.tensor(step[2], rdev)
        elif kind == "empty":
            env[step[1]] = tvm.runtime.tensor(np.zeros(step[2], step[3]), rdev)
        elif kind == "reshape":
            env[step[1]] = tvm.runtime.tensor(env[step[2]].numpy().reshape(step[3]), rdev)
            on_call(step[4], None, env[step[1]], [env[step[2]]])
        else:
            symbol, args = step[1], [env[n] if what == "slot" else n for what, n in step[2]]
            if symbol not in functions:
                functions[symbol] = kernels_lib.get_function(symbol)
            on_call(symbol, functions[symbol], None, args)


class ImpossibleTimes(ValueError):
    """A device reported times it cannot have measured (the message names them)."""


# How much longer than asking for them took a device's runs may claim to have taken: clocks
# differ a little in rate, and a timer's resolution rounds up.
_CLOCK_SLACK = 1.25
_CLOCK_SLACK_S = 0.05


def check_times(device: str, what: str, results, elapsed_s: float) -> list[float]:
    """``results`` (seconds, one per run) of ``what`` as ``device`` reported them, if they can
    be times: finite, not negative, and all the runs together no longer than the ``elapsed_s``
    seconds it took to ask for them. ImpossibleTimes otherwise (NaN, -1 s, 1e300 s: a broken
    or hostile device, whose figures would be written as a costs.json the reader refuses)."""
    values = list(results)
    for i, t in enumerate(values):
        if isinstance(t, bool) or not isinstance(t, (int, float)) or not math.isfinite(t) or t < 0:
            raise ImpossibleTimes(f"{device} reported {t!r} s for run {i + 1} of {len(values)} of {what}: not a time")
    total = sum(values)
    if total > elapsed_s * _CLOCK_SLACK + _CLOCK_SLACK_S:
        raise ImpossibleTimes(
            f"{device} reported {total:.3g} s for {len(values)} run(s) of {what}, which took {elapsed_s:.3g} s "
            "to ask for: not a time it measured"
        )
    return [float(t) for t in values]


def _timed(device: str, what: str, evaluate, args) -> list[float]:
    """The runs of ``evaluate(*args)`` (a time_evaluator), in seconds, checked."""
    started = time.monotonic()
    results = evaluate(*args).results
    return check_times(device, what, results, time.monotonic() - started)


def _load(dev: Device, model: str, kernels: str):
    sess = dev.session
    sess.upload(model)
    sess.upload(kernels)
    return sess.load_module(os.path.basename(model)), sess.load_module(os.path.basename(kernels))


def _measure_one(dev: Device, model: str, kernels: str, steps, inputs, repeat: int) -> dict:
    """Every kernel call timed on the device, on the values the model computes there."""
    import tvm
    from tvm import relax

    rmodel, rkernels = _load(dev, model, kernels)
    rdev = dev.session.cpu(0)
    # First, before anything is timed: the memory of two cold runs (remote/heap.py).
    allocations = measure_remote_allocations(rmodel, rkernels, rdev, inputs, f"{dev.describe()} ({dev.address})")
    evaluators: dict[str, object] = {}
    times: list[list[float]] = [[] for _ in range(repeat)]
    symbols: list[str] = []

    def time_call(symbol, function, _ret, args) -> None:
        if function is None:
            return  # a builtin: in the whole-model runs only
        if symbol not in evaluators:
            evaluators[symbol] = rkernels.time_evaluator(symbol, rdev, number=1, repeat=repeat)
        results = _timed(dev.name, f"kernel {symbol}", evaluators[symbol], args)  # later calls see its output
        symbols.append(symbol)
        for r in range(repeat):
            times[r].append(results[r] * 1e3)

    _replay(dev, rkernels, steps, time_call)
    vm = relax.VirtualMachine(rmodel, rdev)
    plain = _timed(
        dev.name,
        "the whole model (main)",
        vm.time_evaluator("main", rdev, number=1, repeat=repeat),
        [tvm.runtime.tensor(a, rdev) for a in inputs],
    )
    plain_ms = [t * 1e3 for t in plain]
    return {
        "symbols": symbols,
        "times": times,
        "plain_ms": plain_ms,
        "wall_ms": [sum(run) for run in times],
        "plain_wall_ms": plain_ms,
        "clock": "device_timer",
        "allocations": allocations,
    }


def observe_on_device(executable, target: str, steps, request: RemoteRequest, compiler, triple, after_call) -> dict:
    """Run the model on the request's (first) device, one call at a time, calling
    ``after_call(symbol, ret, args)`` after each (``numerics.observe.Observer``); the device's
    record, or RemoteError naming it."""
    devices = open_devices(request, largest_answer(steps))
    dev = devices[0]
    with tempfile.TemporaryDirectory(prefix="tvm-explorer-remote-") as workdir:
        model, kernels = export(executable, workdir, compiler, target.split()[0] == "c", triple)
        check_arch(devices, model, target)
        try:
            _rmodel, rkernels = _load(dev, model, kernels)

            def run_call(symbol, function, ret, args) -> None:
                if function is not None:
                    function(*args)
                after_call(symbol, ret, args)

            _replay(dev, rkernels, steps, run_call)
        except Exception as err:  # noqa: BLE001 - said once, naming the device
            raise RemoteError(
                f"lost {dev.name} while running the model for --numerics ({dev.failure(err)}); nothing was "
                f"recorded and the previous bundle is unchanged: check the device ({request.where()}) and run again"
            ) from None
    return dev.record()


def measure_on_devices(
    executable,
    target: str,
    steps,
    inputs,
    repeat: int,
    request: RemoteRequest,
    compiler: str | None,
    triple: str | None = None,
) -> list[tuple[dict, dict]]:
    """``[(device record, measured calls)]`` per device, or RemoteError naming the device or
    key and what to do; never a part of the devices."""
    devices = open_devices(request, largest_answer(steps))
    with tempfile.TemporaryDirectory(prefix="tvm-explorer-remote-") as workdir:
        model, kernels = export(executable, workdir, compiler, target.split()[0] == "c", triple)
        check_arch(devices, model, target)
        results: list[dict | None] = [None] * len(devices)
        failures: list[str | None] = [None] * len(devices)
        impossible: list[str] = []

        def run(i: int, dev: Device) -> None:
            try:
                results[i] = _measure_one(dev, model, kernels, steps, inputs, repeat)
            except ImpossibleTimes as err:
                impossible.append(str(err))
            except Exception as err:  # noqa: BLE001 - said once, naming the device
                failures[i] = f"{dev.name}: {dev.failure(err)}"

        threads = [threading.Thread(target=run, args=(i, d), daemon=True) for i, d in enumerate(devices)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    if impossible:
        raise RemoteError(
            f"{'; '.join(impossible)}; nothing was recorded and the previous bundle is unchanged (its costs.json "
            f"kept): check the device's timer ({request.where()}) and run again"
        )
    lost = [f for f in failures if f]
    if lost:
        raise RemoteError(
            f"lost {len(lost)} of {len(devices)} device(s) while measuring ({'; '.join(lost)}); "
            "nothing was recorded and the previous bundle is unchanged: check the device(s) "
            f"({request.where()}) and run again"
        )
    return [(dev.record(), res) for dev, res in zip(devices, results) if res is not None]

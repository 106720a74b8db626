"""Run a freshly built model and time every kernel call.

The run happens in a process forked from the compile (so that a model crashing while it runs
costs the profile, not the bundle): target ``c`` is first compiled with the system C compiler
through TVM's own ``export_library`` into a temporary directory, ``llvm`` runs as built. TVM's
``VirtualMachine.set_instrument`` hook is called before and after every call the VM makes
(kernels and VM builtins); the time between the two is the call's time. After warm-up runs,
``repeat`` instrumented runs alternate with as many plain runs of the whole model.

CUDA (``measure_on_device``) runs in a fresh process instead (a CUDA context does not survive
``fork``) and times each kernel call with TVM's CUDA-event timer (``DeviceTimer``); both paths
share the run loop (``_run``) and the result format, and ``model.build`` joins either to layers.
"""

from __future__ import annotations

import json
import os
import re
import signal
import tempfile
import time
from dataclasses import dataclass

WARMUP = 2
TIMEOUT = 900.0  # seconds a profile may take before it is given up


@dataclass
class Measured:
    """The calls of one run in order (``symbols``), each call's CPU time per repeat
    (``times[r][i]``, ms), the plain runs' CPU times, and the wall times of both per run."""

    symbols: list[str]
    times: list[list[float]]
    plain_ms: list[float]
    wall_ms: list[float]
    plain_wall_ms: list[float]
    clock: str = "process_cpu"  # or "device_timer" (CUDA events on CUDA)
    c_fixes: list[str] | None = None  # the ``#define`` lines TVM's C was compiled with (capture/c_source.py)
    allocations: dict | None = None  # what two cold runs allocated (runtime/allocations.py; CPU only)
    nvtx: dict | None = None  # the NVTX ranges the device timer opened per layer call (costs/nvtx_ranges.py)


class ProfileFailed(Exception):
    """The model could not be profiled; the message is the reason (one line)."""


def first_line(text: str | BaseException) -> str:
    """The line of a compiler or TVM message that says what went wrong."""
    lines = [ln.strip() for ln in str(text).splitlines() if ln.strip()]
    for ln in lines:  # a compiler's diagnostic: FILE:LINE[:COL]: error: ...
        if re.search(r":\d+(?::\d+)?: (?:fatal )?error:", ln):
            return ln[:300]
    for ln in lines:
        if "error:" in ln or "Error:" in ln:
            return ln[:300]
    return (lines[0] if lines else "unknown reason")[:300]


def write_outcome(result_path, measure) -> None:
    """Run ``measure()`` in a profiling process and write its result as JSON to
    ``result_path``, or ``{"error": reason}`` in one line when it failed."""
    try:
        got = measure()
    except ProfileFailed as err:
        got = {"error": str(err)}
    except Exception as err:  # noqa: BLE001 - one line for the user
        got = {"error": f"the model failed while running: {first_line(err)}"}
    with open(result_path, "w", encoding="utf-8") as fh:
        json.dump(got, fh)


def _load(executable, target: str, workdir: str):
    """The loaded module, two VMs on it (one to instrument, one for the plain runs), and the
    C fixes the module was compiled with."""
    import tvm
    from tvm import relax

    from tvm_explorer.capture.c_source import export_c_library

    module, fixes = executable, []
    if target == "c":
        lib = os.path.join(workdir, "model.so")
        try:
            # -O2, as a C user would build it (without, gcc compiles -O0: 10x slower runs)
            fixes = export_c_library(executable, lib, options=["-O2"])
        except Exception as err:  # noqa: BLE001 - the system compiler's verdict
            raise ProfileFailed(f"the system C compiler rejected the generated C: {first_line(err)}") from None
        module = tvm.runtime.load_module(lib)
    return module, relax.VirtualMachine(module, tvm.cpu()), relax.VirtualMachine(module, tvm.cpu()), fixes


class ProcessClock:
    """Times every call in CPU time of this process (the CPU targets: what the kernels cost,
    whatever else a shared machine runs); wall time is kept beside it."""

    name = "process_cpu"

    def hook(self, stamps: list):
        """The ``set_instrument`` hook: appends ``(symbol, cpu_ns, wall_ns)`` per call."""
        cpu, wall = time.process_time_ns, time.perf_counter_ns
        started: list[tuple[int, int]] = []

        def instrument(_func, symbol, before, _ret, *_args):
            c, w = cpu(), wall()
            if before:
                started.append((c, w))
            else:
                c0, w0 = started.pop()
                stamps.append((symbol, c - c0, w - w0))
            return 0

        return instrument

    def plain(self, main, args) -> tuple[float, float]:
        """CPU and wall ms of one plain run of the whole model."""
        c0, w0 = time.process_time_ns(), time.perf_counter_ns()
        main(*args)
        return (time.process_time_ns() - c0) / 1e6, (time.perf_counter_ns() - w0) / 1e6


class DeviceTimer:
    """Times every kernel call with TVM's timer for the device, as ``time_evaluator`` runs it:
    on CUDA a pair of CUDA events around the launch (``runtime.timer.cuda``), on the CPU a
    wall clock. TVM 0.27 exposes its timers to Python only through ``time_evaluator``, so the
    hook times the kernel itself before the VM would call it (one untimed call, then one
    timed call, on the call's own arguments) and tells the VM to skip its own call
    (``VMInstrumentReturnKind.kSkipRun``). VM builtins (allocations, checks, reshape views)
    run on the host: they are timed with a monotonic clock."""

    name = "device_timer"
    SKIP_RUN = 1

    def __init__(self, lib, dev, plain_vm, ranges=None):
        self.lib, self.dev, self.ranges = lib, dev, ranges
        self.evaluators: dict[str, object] = {}
        self._plain = plain_vm.time_evaluator("main", dev, number=1, repeat=1)

    def _evaluator(self, symbol: str):
        if symbol not in self.evaluators:
            owners = [m for m in (self.lib, *self.lib.imports) if m.implements_function(symbol)]
            self.evaluators[symbol] = owners[0].time_evaluator(symbol, self.dev, number=1, repeat=1) if owners else None
        return self.evaluators[symbol]

    def hook(self, stamps: list):
        """The ``set_instrument`` hook: appends ``(symbol, ns, ns)`` per call."""
        wall = time.perf_counter_ns
        started: list[int] = []

        def instrument(_func, symbol, before, _ret, *args):
            if not before:
                ns = wall() - started.pop()
                stamps.append((symbol, ns, ns))
                return 0
            evaluator = self._evaluator(symbol)
            if evaluator is None:
                started.append(wall())
                return 0
            opened = self.ranges is not None and self.ranges.push(symbol)
            try:
                ns = int(evaluator(*args).results[0] * 1e9)
            finally:
                if opened:
                    self.ranges.pop()
            stamps.append((symbol, ns, ns))
            return self.SKIP_RUN

        return instrument

    def plain(self, main, args) -> tuple[float, float]:
        """ms of one plain run of the whole model, on the same timer (CUDA events on CUDA)."""
        del main  # the evaluator calls the plain VM's main itself
        ms = self._plain(*args).results[0] * 1e3
        return ms, ms


def _run(vm, plain_vm, args, repeat: int, clock) -> dict:
    """Warm up, then ``repeat`` instrumented runs, each followed by a plain run; the same for
    every clock and device."""
    main, plain_main = vm["main"], plain_vm["main"]
    for _ in range(WARMUP):
        main(*args)
        plain_main(*args)
    stamps: list[tuple[str, int, int]] = []
    vm.set_instrument(clock.hook(stamps))
    main(*args)  # a warm-up run with the instrument in place
    symbols: list[str] | None = None
    times, wall_totals, plain, plain_wall = [], [], [], []
    for _ in range(repeat):
        stamps.clear()
        main(*args)
        run = [s for s, _, _ in stamps]
        if symbols is None:
            symbols = run
        elif run != symbols:
            raise ProfileFailed("the model called different kernels from one run to the next")
        times.append([dc / 1e6 for _, dc, _ in stamps])
        wall_totals.append(sum(dw for _, _, dw in stamps) / 1e6)
        ms, wall_ms = clock.plain(plain_main, args)
        plain.append(ms)
        plain_wall.append(wall_ms)
    return {
        "symbols": symbols or [],
        "times": times,
        "plain_ms": plain,
        "wall_ms": wall_totals,
        "plain_wall_ms": plain_wall,
        "clock": clock.name,
    }


def _measure(executable, target: str, arrays, repeat: int, workdir: str) -> dict:
    import tvm

    from tvm_explorer.runtime.allocations import measure_allocations

    module, vm, plain_vm, fixes = _load(executable, target, workdir)
    # First, before the timed runs: the memory of two cold runs.
    allocations = measure_allocations(module, arrays)
    timed = _run(vm, plain_vm, [tvm.runtime.tensor(a) for a in arrays], repeat, ProcessClock())
    return timed | {"c_fixes": fixes, "allocations": allocations}


def measure_loaded(lib, device: str, arrays, repeat: int, labels: dict[str, str] | None = None) -> dict:
    """Time every kernel call of a loaded library on ``device`` with TVM's device timer (what
    the profiling process of ``measure_on_device`` runs); each call of a kernel named in
    ``labels`` runs inside an NVTX range of that name (``costs/nvtx_ranges.py``)."""
    import tvm
    from tvm import relax

    dev = tvm.device(device)
    if not dev.exist:
        raise ProfileFailed(f"no {device} device is visible to the profiling process")
    allocations = None
    if device == "cpu":
        from tvm_explorer.runtime.allocations import measure_allocations

        allocations = measure_allocations(lib, arrays)  # first, before the timed runs
    from tvm_explorer.costs.nvtx_ranges import LayerRanges

    vm, plain_vm = relax.VirtualMachine(lib, dev), relax.VirtualMachine(lib, dev)
    ranges = LayerRanges(labels or {})
    clock = DeviceTimer(lib, dev, plain_vm, ranges)
    return _run(vm, plain_vm, [tvm.runtime.tensor(a, dev) for a in arrays], repeat, clock) | {
        "allocations": allocations,
        "nvtx": ranges.summary(),
    }


def measure(executable, target: str, arrays, repeat: int, timeout: float = TIMEOUT) -> Measured:
    """Time every call of ``repeat`` runs of the model. Raises ProfileFailed with a reason."""
    with tempfile.TemporaryDirectory(prefix="tvm-explorer-profile-") as workdir:
        result_path = os.path.join(workdir, "result.json")
        if not hasattr(os, "fork"):
            return Measured(**_measure(executable, target, arrays, repeat, workdir))
        pid = os.fork()
        if pid == 0:  # the profiling process: never returns
            code = 1
            try:
                for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGUSR1):
                    signal.signal(sig, signal.SIG_DFL)
                _die_with_parent()
                # A crash dump of the model would read like one of the compile (the CLI files
                # those away); the reason comes back in the result instead.
                devnull = os.open(os.devnull, os.O_WRONLY)
                os.dup2(devnull, 2)
                write_outcome(result_path, lambda: _measure(executable, target, arrays, repeat, workdir))
                code = 0
            finally:
                os._exit(code)
        return _wait(pid, result_path, timeout)


def measure_on_device(
    executable,
    device: str,
    arrays,
    repeat: int,
    timeout: float = TIMEOUT,
    options: list[str] | None = None,
    labels: dict[str, str] | None = None,
) -> Measured:
    """Time every kernel call of ``repeat`` runs on ``device`` (``cuda``; ``cpu`` runs the
    same path on the host) with TVM's device timer, in a fresh Python process: the model is
    exported with ``export_library`` into a temporary directory and loaded there (a CUDA
    context does not survive ``fork``, and a fresh process needs none of the compile's).
    ``labels``: kernel name -> the NVTX range of its calls (``costs/nvtx_ranges.py``).
    Raises ProfileFailed with a reason."""
    import subprocess

    import numpy as np

    from tvm_explorer.capture.c_source import export_c_library
    from tvm_explorer.supervise.child_python import python_module_command

    with tempfile.TemporaryDirectory(prefix="tvm-explorer-profile-") as workdir:
        lib = os.path.join(workdir, "model.so")
        try:
            fixes = export_c_library(executable, lib, options)
        except Exception as err:  # noqa: BLE001 - the host compiler's verdict
            raise ProfileFailed(f"the system compiler rejected the generated code: {first_line(err)}") from None
        inputs, result = os.path.join(workdir, "inputs.npz"), os.path.join(workdir, "result.json")
        np.savez(inputs, *arrays)
        names = os.path.join(workdir, "labels.json")
        with open(names, "w", encoding="utf-8") as fh:
            json.dump(labels or {}, fh)
        cmd = python_module_command("tvm_explorer.costs.runner", lib, inputs, str(repeat), device, result, names)
        try:
            proc = subprocess.run(
                cmd,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.PIPE,
                text=True,
                timeout=timeout,
                preexec_fn=_die_with_parent if os.name == "posix" else None,
            )
        except subprocess.TimeoutExpired:
            raise ProfileFailed(f"the profile did not finish within {timeout:g} s") from None
        if proc.returncode < 0:
            name = signal.Signals(-proc.returncode).name
            raise ProfileFailed(f"the model crashed while running ({name})")
        if proc.returncode != 0 and not os.path.exists(result):
            raise ProfileFailed(f"the profiling process failed: {first_line(proc.stderr)}")
        measured = _read_result(result)
        measured.c_fixes = fixes
        return measured


def _die_with_parent() -> None:
    """Linux: end this process when the compile that forked it ends (a killed compile must
    not leave a model running)."""
    try:
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass


def _wait(pid: int, result_path: str, timeout: float) -> Measured:
    deadline = time.monotonic() + timeout
    status = None
    try:
        while True:
            done, status = os.waitpid(pid, os.WNOHANG)
            if done:
                break
            if time.monotonic() > deadline:
                raise ProfileFailed(f"the profile did not finish within {timeout:g} s")
            time.sleep(0.02)
    finally:
        if status is None:
            try:
                os.kill(pid, signal.SIGKILL)
                os.waitpid(pid, 0)
            except (ProcessLookupError, ChildProcessError):
                pass
    if os.WIFSIGNALED(status):
        name = signal.Signals(os.WTERMSIG(status)).name
        raise ProfileFailed(f"the model crashed while running ({name})")
    return _read_result(result_path)


def _read_result(result_path: str) -> Measured:
    """The Measured a profiling process wrote, or ProfileFailed with its reason."""
    try:
        with open(result_path, encoding="utf-8") as fh:
            got = json.load(fh)
    except (OSError, ValueError):
        raise ProfileFailed("the profiling process ended without a result") from None
    if "error" in got:
        raise ProfileFailed(got["error"])
    return Measured(
        got["symbols"],
        got["times"],
        got["plain_ms"],
        got["wall_ms"],
        got["plain_wall_ms"],
        got.get("clock", "process_cpu"),
        got.get("c_fixes"),
        got.get("allocations"),
        got.get("nvtx"),
    )

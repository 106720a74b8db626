"""Run a freshly built model and time every kernel call.

The run happens in a process forked from the compile (so that a model crashing while it runs
costs the profile, not the bundle): target ``c`` is first compiled with the system C compiler
through TVM's own ``export_library`` into a temporary directory, ``llvm`` runs as built. TVM's
``VirtualMachine.set_instrument`` hook is called before and after every call the VM makes
(kernels and VM builtins); the time between the two is the call's time. After warm-up runs,
``repeat`` instrumented runs alternate with as many plain runs of the whole model.
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


class ProfileFailed(Exception):
    """The model could not be profiled; the message is the reason (one line)."""


def first_line(text: str) -> str:
    """The line of a compiler or TVM message that says what went wrong."""
    lines = [ln.strip() for ln in str(text).splitlines() if ln.strip()]
    for ln in lines:  # a compiler's diagnostic: FILE:LINE[:COL]: error: ...
        if re.search(r":\d+(?::\d+)?: (?:fatal )?error:", ln):
            return ln[:300]
    for ln in lines:
        if "error:" in ln or "Error:" in ln:
            return ln[:300]
    return (lines[0] if lines else "unknown reason")[:300]


def _load(executable, target: str, workdir: str):
    """Two VMs on the same module: one to instrument, one for the plain runs."""
    import tvm
    from tvm import relax

    module = executable
    if target == "c":
        lib = os.path.join(workdir, "model.so")
        try:
            # -O2, as a C user would build it (without, gcc compiles -O0: 10x slower runs)
            executable.export_library(lib, options=["-O2"])
        except Exception as err:  # noqa: BLE001 - the system compiler's verdict
            raise ProfileFailed(f"the system C compiler rejected the generated C: {first_line(err)}") from None
        module = tvm.runtime.load_module(lib)
    return relax.VirtualMachine(module, tvm.cpu()), relax.VirtualMachine(module, tvm.cpu())


def _measure(executable, target: str, arrays, repeat: int, workdir: str) -> dict:
    import tvm

    vm, plain_vm = _load(executable, target, workdir)
    args = [tvm.runtime.tensor(a) for a in arrays]
    main, plain_main = vm["main"], plain_vm["main"]
    for _ in range(WARMUP):
        main(*args)
        plain_main(*args)
    # CPU time of this process: what the kernels cost, whatever else the machine runs (wall
    # time on a shared machine mostly measures the neighbours); wall time is kept beside it.
    cpu, wall = time.process_time_ns, time.perf_counter_ns
    stamps: list[tuple[str, int, int]] = []
    started: list[tuple[int, int]] = []

    def instrument(_func, symbol, before, _ret, *_args):
        c, w = cpu(), wall()
        if before:
            started.append((c, w))
        else:
            c0, w0 = started.pop()
            stamps.append((symbol, c - c0, w - w0))
        return 0

    vm.set_instrument(instrument)
    stamps.clear()
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
        c0, w0 = cpu(), wall()
        plain_main(*args)
        plain.append((cpu() - c0) / 1e6)
        plain_wall.append((wall() - w0) / 1e6)
    return {"symbols": symbols or [], "times": times, "plain_ms": plain,
            "wall_ms": wall_totals, "plain_wall_ms": plain_wall}


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
                try:
                    got = _measure(executable, target, arrays, repeat, workdir)
                except ProfileFailed as err:
                    got = {"error": str(err)}
                except Exception as err:  # noqa: BLE001 - one line for the user
                    got = {"error": f"the model failed while running: {first_line(err)}"}
                with open(result_path, "w", encoding="utf-8") as fh:
                    json.dump(got, fh)
                code = 0
            finally:
                os._exit(code)
        return _wait(pid, result_path, timeout)


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
    try:
        with open(result_path, encoding="utf-8") as fh:
            got = json.load(fh)
    except (OSError, ValueError):
        raise ProfileFailed("the profiling process ended without a result") from None
    if "error" in got:
        raise ProfileFailed(got["error"])
    return Measured(got["symbols"], got["times"], got["plain_ms"], got["wall_ms"], got["plain_wall_ms"])

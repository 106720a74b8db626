"""A real TVM RPC tracker and servers on this machine's loopback, on free ports."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _start(*args: str, log=None) -> subprocess.Popen:
    # A session of its own: the server forks workers that must end with it.
    return subprocess.Popen(
        [sys.executable, "-m", *args],
        stdout=log or subprocess.DEVNULL,
        stderr=subprocess.STDOUT if log else subprocess.DEVNULL,
        start_new_session=True,
    )


def stop(proc: subprocess.Popen) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    proc.wait(timeout=30)


def wait_port(port: int, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return
        except OSError:
            time.sleep(0.2)
    raise TimeoutError(f"nothing listens on 127.0.0.1:{port}")


def start_tracker() -> tuple[subprocess.Popen, int]:
    port = free_port()
    proc = _start("tvm.exec.rpc_tracker", "--host", "127.0.0.1", "--port", str(port), "--port-end", str(port + 1))
    wait_port(port)
    return proc, port


def spawn_server(tracker_port: int | None = None, key: str = "", log=None) -> tuple[subprocess.Popen, int]:
    """An RPC server (registered with the tracker under ``key`` if given), not yet waited
    for (``wait_port``); ``log``: a file for its output."""
    port = free_port()
    args = ["tvm.exec.rpc_server", "--host", "127.0.0.1", "--port", str(port), "--port-end", str(port + 1)]
    if tracker_port is not None:
        args += ["--tracker", f"127.0.0.1:{tracker_port}", "--key", key]
    return _start(*args, log=log), port


def wait_free(tracker_port: int, key: str, count: int, timeout: float = 60.0) -> None:
    """Until the tracker has ``count`` free devices of ``key``."""
    from tvm import rpc

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            queue = rpc.connect_tracker("127.0.0.1", tracker_port).summary()["queue_info"]
            if queue.get(key, {}).get("free", 0) >= count:
                return
        except Exception:  # noqa: BLE001 - not up yet
            pass
        time.sleep(0.3)
    raise TimeoutError(f"the tracker has no {count} free devices of {key}")

"""Issue 37, item 7: hostile RPC servers and trackers on loopback (``hostile_rpc.py``). Every
read from a device or a tracker is bounded in time (``--rpc-timeout``, however the bytes
trickle in) and in size (a key, a tracker's message, a device's answer), and every failure is
one RemoteError naming the server, tracker or device and what it sent — not a hang until the
compile's ``--timeout``, a 2 GB allocation, a traceback or a blame on ``--memory-limit``.

The sessions are opened in process (``open_devices``, TVM's real client behind the relay), in
a thread the test waits on for a bounded time, so that a hang fails instead of stalling the
suite; one compile per path goes through the CLI."""

from __future__ import annotations

import concurrent.futures
import resource
import time

import pytest
from tests.remote import hostile_rpc as h
from tests.remote.conftest import compile_profiled

from tvm_explorer.errors import RemoteError
from tvm_explorer.remote.devices import open_devices
from tvm_explorer.remote.request import RemoteRequest

TIMEOUT = 2.0  # --rpc-timeout
SLACK = 8.0
EXIT_REMOTE = 7


@pytest.fixture(scope="module", autouse=True)
def _tvm_imported():
    import tvm.rpc  # noqa: F401 - seconds of import, not to be counted in the first case's time


def _open(request: RemoteRequest) -> tuple[str, float]:
    """The one message of opening the request's devices, and how long it took."""
    pool = concurrent.futures.ThreadPoolExecutor(1)
    started = time.monotonic()
    future = pool.submit(open_devices, request)
    try:
        future.result(timeout=TIMEOUT + 60)
    except RemoteError as err:
        return str(err), time.monotonic() - started
    except concurrent.futures.TimeoutError:
        pytest.fail(f"still waiting for the device after {TIMEOUT + 60:g} s (--rpc-timeout {TIMEOUT:g})")
    finally:
        pool.shutdown(wait=False)
    pytest.fail("a session was opened with a hostile server")


def _rss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


@pytest.mark.parametrize(
    "behaviour, said",
    [
        (h.rpc_garbage, "it sent b'HTTP/1.1 400 Bad Request'… where a TVM RPC server's greeting belongs"),
        (h.rpc_huge_key, "announced a key of 2.15 GB (at most 4096 bytes are accepted)"),
        (h.rpc_huge_packet, "announced a reply of 1.1 TB"),
        (h.rpc_drip, "sent only"),
        (h.rpc_silent, f"sent nothing within {TIMEOUT:g} s (--rpc-timeout)"),
    ],
    ids=["garbage", "huge-key", "huge-packet", "drip", "silent"],
)
def test_a_hostile_rpc_server_is_one_message_within_the_timeout(behaviour, said):
    rss = _rss_mib()
    with h.Hostile(behaviour) as server:
        message, took = _open(RemoteRequest(rpc=("127.0.0.1", server.port), timeout=TIMEOUT))
    assert took < TIMEOUT + SLACK, (took, message)
    assert "\n" not in message and f"the RPC server at {server.address}" in message, message
    assert said in message, message
    assert _rss_mib() - rss < 500  # nothing near the 2 GB it announced was allocated


@pytest.mark.parametrize(
    "behaviour, said",
    [
        (h.tracker_garbage, "is not a TVM RPC tracker: it sent b'SSH-2.0-OpenSSH_9.6\\r\\n'"),
        (h.tracker_silent, f"sent nothing of its greeting within {TIMEOUT:g} s (--rpc-timeout)"),
        (h.tracker_huge, "announced its answer of 2.15 GB"),
        (h.tracker_drip, f"bytes of its answer within {TIMEOUT:g} s (--rpc-timeout)"),
        (h.tracker_wrong_shape, "answered the request for a device with b'[0, \"a device\"]', not a device's address"),
    ],
    ids=["garbage", "silent", "huge", "drip", "wrong-shape"],
)
def test_a_hostile_tracker_is_one_message_within_the_timeout(behaviour, said):
    with h.Hostile(behaviour) as tracker:
        message, took = _open(RemoteRequest(tracker=("127.0.0.1", tracker.port), key="board", timeout=TIMEOUT))
    assert took < TIMEOUT + SLACK, (took, message)
    assert "\n" not in message and tracker.address in message, message
    assert said in message, message


@pytest.mark.parametrize("behaviour", [h.rpc_huge_key, h.rpc_silent], ids=["huge-key", "silent"])
def test_a_hostile_device_handed_out_by_a_tracker_is_named(behaviour):
    with h.Hostile(behaviour) as device, h.Hostile(h.tracker_handing_out(device.port)) as tracker:
        message, took = _open(
            RemoteRequest(tracker=("127.0.0.1", tracker.port), key="board", timeout=TIMEOUT, devices=2)
        )
    assert took < TIMEOUT + SLACK, (took, message)
    assert f"device {device.address} (key 'board', handed out by the tracker {tracker.address})" in message, message
    assert "announced a key" in message or "sent nothing" in message, message


@pytest.mark.parametrize(
    "flag, behaviour, said",
    [
        ("--rpc", h.rpc_huge_packet, "announced a reply of 1.1 TB"),
        ("--rpc-tracker", h.tracker_drip, f"bytes of its answer within {TIMEOUT:g} s (--rpc-timeout)"),
    ],
    ids=["rpc", "tracker"],
)
def test_the_cli_says_it_once_with_the_devices_exit_code(small_dense, tmp_path, flag, behaviour, said):
    """The whole compile: exit 7, one line naming the server and what it sent (not "internal
    error", not the memory limit), no bundle, and no wait for the compile's --timeout."""
    with h.Hostile(behaviour) as server:
        extra = ["--rpc-key", "board"] if flag == "--rpc-tracker" else []
        proc = compile_profiled(
            small_dense,
            tmp_path / "x.bundle",
            "llvm",
            flag,
            server.address,
            *extra,
            "--rpc-timeout",
            TIMEOUT,
            "--timeout",
            600,
            timeout=900,
        )
    err = proc.stderr.strip()
    assert proc.returncode == EXIT_REMOTE, err
    assert err.count("\n") == 0 and server.address in err and said in err, err
    assert "internal error" not in err and "memory" not in err and "Traceback" not in err, err
    assert not (tmp_path / "x.bundle").exists()

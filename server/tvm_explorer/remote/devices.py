"""Getting devices: one RPC server (``--rpc``) or ``--devices N`` of a key from a tracker,
each within ``--rpc-timeout``; and what each device says it is."""

from __future__ import annotations

import re
import socket
import struct
import time
from dataclasses import dataclass, field

from tvm_explorer.errors import RemoteError
from tvm_explorer.remote.request import RemoteRequest

# Global functions a TVM RPC server with LLVM answers (a runtime-only server may not).
_DESCRIBE = (
    ("triple", "target.llvm_get_system_triple"),
    ("cpu", "target.llvm_get_system_cpu"),
    ("threads", "runtime.NumThreads"),
)


@dataclass
class Device:
    """One RPC session and what the device reported about itself."""

    session: object
    address: str  # host:port of its RPC server
    key: str | None
    info: dict = field(default_factory=dict)  # triple, cpu, threads (None where not reported)

    @property
    def name(self) -> str:
        """``device 127.0.0.1:9091 (key board-a)``: how messages name it."""
        return f"device {self.address}" + (f" (key {self.key!r})" if self.key else "")

    def describe(self) -> str:
        """``znver5, x86_64-conda-linux-gnu, 1 thread``: what the device reported."""
        parts = [str(self.info[k]) for k in ("cpu", "triple") if self.info.get(k)]
        if self.info.get("threads"):
            n = self.info["threads"]
            parts.append(f"{n} thread{'s' if n != 1 else ''}")
        return ", ".join(parts) or "a device that does not describe itself"

    def record(self) -> dict:
        """Its entry in ``costs.json`` ``profile.remote.devices``."""
        return {"address": self.address, "key": self.key, **self.info, "description": self.describe()}


def _describe(session) -> dict:
    info: dict = {}
    for key, func in _DESCRIBE:
        try:
            info[key] = session.get_function(func)()
        except Exception:  # noqa: BLE001 - a server without LLVM does not say
            info[key] = None
    for key in ("triple", "cpu"):  # the device's own words: kept short
        info[key] = str(info[key])[:100] if info.get(key) is not None else None
    if info.get("threads") is not None:
        info["threads"] = int(info["threads"])
    return info


def _connect(host: str, port: int, key: str, timeout: float, what: str):
    from tvm import rpc

    if not key:  # a server the tracker handed out is there (and a probe would spend its match key)
        _reachable(host, port, timeout, what)
    try:
        return rpc.connect(host, port, key=key, session_timeout=0)
    except Exception as err:  # noqa: BLE001 - TVM's socket error, said once
        raise RemoteError(f"cannot open a session with {what}: {reason(err)}") from None


def _reachable(host: str, port: int, timeout: float, what: str) -> None:
    try:
        socket.create_connection((host, port), timeout=min(timeout, 10.0)).close()
    except OSError as err:
        raise RemoteError(
            f"cannot reach {what} ({err.strerror or err}): is it running, and is the address right?"
        ) from None


_SAYS = re.compile(r"error|cannot find|undefined reference|no such file", re.I)


def reason(err: BaseException) -> str:
    """The line of a TVM or compiler error that says what went wrong (not a heading such as
    TVM's "Compilation error:"; a linker's "cannot find crti.o" before its "ld returned 1")."""
    lines = [ln.strip() for ln in str(err).splitlines() if ln.strip()]
    said = [ln for ln in lines if _SAYS.search(ln) and not ln.endswith(":")]
    return (said[0] if said else lines[-1] if lines else type(err).__name__)[:300]


class _Tracker:
    """A connection to a tracker, one per device asked for (a request blocks its socket
    until the tracker hands a device out)."""

    def __init__(self, host: str, port: int, timeout: float):
        from tvm.rpc import base

        self.base, self.host, self.port = base, host, port
        self.what = f"the RPC tracker at {host}:{port}"
        _reachable(host, port, timeout, self.what)
        try:
            self.sock = socket.create_connection((host, port), timeout=timeout)
            self.sock.sendall(struct.pack("<i", base.RPC_TRACKER_MAGIC))
            magic = struct.unpack("<i", base.recvall(self.sock, 4))[0]
        except OSError as err:
            raise RemoteError(f"cannot talk to {self.what}: {err}") from None
        if magic != base.RPC_TRACKER_MAGIC:
            raise RemoteError(f"{host}:{port} answers, but is not a TVM RPC tracker (check --rpc-tracker)")

    def ask(self, key: str) -> None:
        self.base.sendjson(self.sock, [self.base.TrackerCode.REQUEST, key, "", 1])

    def answer(self, deadline: float) -> tuple[str, int, str] | None:
        """The device the tracker hands out before ``deadline``, or None."""
        self.sock.settimeout(max(deadline - time.monotonic(), 0.01))
        try:
            value = self.base.recvjson(self.sock)
        except TimeoutError:
            return None
        except OSError as err:
            raise RemoteError(f"lost {self.what} while waiting for a device: {err}") from None
        if value[0] != self.base.TrackerCode.SUCCESS:
            raise RemoteError(f"{self.what} refused the request: {value!r}")
        host, port, match = value[1]
        return str(host), int(port), str(match)

    def summary(self) -> dict:
        self.sock.settimeout(10.0)
        self.base.sendjson(self.sock, [self.base.TrackerCode.SUMMARY])
        value = self.base.recvjson(self.sock)
        return value[1] if value and value[0] == self.base.TrackerCode.SUCCESS else {}

    def close(self) -> None:
        self.sock.close()


def _pool_text(host: str, port: int, key: str, timeout: float) -> str:
    """What the tracker says about ``key``'s devices, for the message of a timeout."""
    try:
        tracker = _Tracker(host, port, timeout)
        try:
            servers = tracker.summary().get("server_info", [])
        finally:
            tracker.close()
    except Exception:  # noqa: BLE001 - the message is complete without it
        return ""
    keys = [str(s.get("key", "")).removeprefix("server:") for s in servers]
    registered = keys.count(key)
    if not registered:
        others = ", ".join(sorted(set(keys))) or "none"
        return f"; no device is registered with that key (keys with devices: {others})"
    return f"; all {registered} device(s) of that key are busy"


def open_devices(req: RemoteRequest) -> list[Device]:
    """The devices of the request, each with a live session, or RemoteError naming the server
    or key and what to do."""
    if req.rpc is not None:
        host, port = req.rpc
        session = _connect(host, port, "", req.timeout, f"the RPC server at {host}:{port}")
        return [Device(session, f"{host}:{port}", None, _describe(session))]
    assert req.tracker is not None and req.key is not None
    host, port = req.tracker
    deadline = time.monotonic() + req.timeout
    trackers = [_Tracker(host, port, req.timeout) for _ in range(req.devices)]
    try:  # the tracker keeps a device for the request while its socket is open
        for t in trackers:
            t.ask(req.key)
        got = [g for g in (t.answer(deadline) for t in trackers) if g is not None]
        if len(got) < req.devices:
            some = f"only {len(got)} of {req.devices} devices" if got else "no device"
            raise RemoteError(
                f"{some} of key {req.key!r} became free within {req.timeout:g} s (--rpc-timeout) at the RPC "
                f"tracker {host}:{port}{_pool_text(host, port, req.key, req.timeout)}. Start an RPC server with "
                f"--tracker {host}:{port} --key {req.key}, wait for a busy one, or raise --rpc-timeout"
            )
        devices = []
        for dev_host, dev_port, match in got:
            what = f"device {dev_host}:{dev_port} (key {req.key!r})"
            session = _connect(dev_host, dev_port, match, req.timeout, what)
            devices.append(Device(session, f"{dev_host}:{dev_port}", req.key, _describe(session)))
        return devices
    finally:
        for t in trackers:
            t.close()  # an unanswered request leaves the tracker's queue with its socket

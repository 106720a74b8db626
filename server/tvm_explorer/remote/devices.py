"""Getting devices: one RPC server (``--rpc``) or ``--devices N`` of a key from a tracker,
each within ``--rpc-timeout``; and what each device says it is."""

from __future__ import annotations

import json
import re
import socket
import time
from dataclasses import dataclass, field
from typing import Any

from tvm_explorer.errors import RemoteError
from tvm_explorer.remote.relay import MAX_PACKET, Relay, shown, size_text
from tvm_explorer.remote.request import RemoteRequest

TRACKER_MAGIC = 0x2F271  # tvm.rpc.base.RPC_TRACKER_MAGIC
_TRACKER_SUCCESS, _TRACKER_REQUEST, _TRACKER_SUMMARY = 0, 4, 6  # tvm.rpc.base.TrackerCode
MAX_TRACKER_MESSAGE = 4 << 20  # a summary of a pool of thousands of devices is well under it

# Global functions a TVM RPC server with LLVM answers (a runtime-only server may not).
_DESCRIBE = (
    ("triple", "target.llvm_get_system_triple"),
    ("cpu", "target.llvm_get_system_cpu"),
    ("threads", "runtime.NumThreads"),
)


@dataclass
class Device:
    """One RPC session and what the device reported about itself."""

    session: Any  # a tvm.rpc RPCSession (TVM is untyped)
    address: str  # host:port of its RPC server
    key: str | None
    info: dict = field(default_factory=dict)  # triple, cpu, threads (None where not reported)
    relay: Relay | None = None  # what the session's bytes pass through (relay.py)

    def failure(self, err: BaseException) -> str:
        """What went wrong: what the device sent (or did not send) if that broke the session,
        else TVM's line."""
        if self.relay is not None and self.relay.problem:
            return f"it {self.relay.problem}"
        return reason(err)

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


def _describe(session, relay: Relay, what: str) -> dict:
    info: dict = {}
    for key, func in _DESCRIBE:
        try:
            info[key] = session.get_function(func)()
        except Exception:  # noqa: BLE001 - a server without LLVM does not say
            info[key] = None
        if relay.problem:
            raise RemoteError(f"{what} broke the session while describing itself: it {relay.problem}")
    for key in ("triple", "cpu"):  # the device's own words: one short printable line
        value = info.get(key)
        info[key] = "".join(c if c.isprintable() else "?" for c in str(value)[:100]) if value is not None else None
    threads = info.get("threads")
    info["threads"] = threads if isinstance(threads, int) and 0 < threads < 1 << 20 else None
    return info


def _connect(host: str, port: int, key: str, timeout: float, what: str, max_packet: int):
    """A session with the RPC server at ``host:port`` through a relay (relay.py), and the relay."""
    from tvm import rpc

    if not key:  # a server the tracker handed out is there (and a probe would spend its match key)
        _reachable(host, port, timeout, what)
    try:
        relay = Relay(host, port, timeout, max_packet)
    except OSError as err:
        raise RemoteError(f"cannot open a session with {what}: {err}") from None
    try:
        session = rpc.connect("127.0.0.1", relay.port, key=key, session_timeout=0)
    except Exception as err:  # noqa: BLE001 - TVM's socket error, said once
        relay.close()
        said = (
            f"it {relay.problem}" if relay.problem else reason(err).replace(f"127.0.0.1:{relay.port}", f"{host}:{port}")
        )
        raise RemoteError(f"cannot open a session with {what}: {said}") from None
    return session, relay


def _reachable(host: str, port: int, timeout: float, what: str) -> None:
    try:
        socket.create_connection((host, port), timeout=min(timeout, 10.0)).close()
    except (OSError, UnicodeError, ValueError) as err:  # a host name IDNA cannot encode too
        raise RemoteError(
            f"cannot reach {what} ({(err.strerror if isinstance(err, OSError) else None) or err}): is it running, and is the address right?"
        ) from None


_SAYS = re.compile(r"error|cannot find|undefined reference|no such file", re.I)


def reason(err: BaseException) -> str:
    """The line of a TVM or compiler error that says what went wrong (not a heading such as
    TVM's "Compilation error:"; a linker's "cannot find crti.o" before its "ld returned 1")."""
    lines = [ln.strip() for ln in str(err).splitlines() if ln.strip()]
    said = [ln for ln in lines if _SAYS.search(ln) and not ln.endswith(":")]
    return (said[0] if said else lines[-1] if lines else type(err).__name__)[:300]


class _Late(Exception):
    """Fewer bytes than a message needs came before its deadline (``got`` of them)."""

    def __init__(self, got: int):
        self.got = got


class _Tracker:
    """A connection to a tracker, one per device asked for (a request blocks its socket
    until the tracker hands a device out). Every read is bounded: in time by a deadline (for
    the whole message, however its bytes trickle in) and in size (MAX_TRACKER_MESSAGE); what
    the tracker sends is checked before it is used, and anything else is one RemoteError
    saying what it sent."""

    def __init__(self, host: str, port: int, deadline: float, timeout: float):
        self.host, self.port = host, port
        self.what = f"the RPC tracker at {host}:{port}"
        self.timeout = timeout  # --rpc-timeout, as messages say it
        timeout = max(deadline - time.monotonic(), 0.01)
        _reachable(host, port, timeout, self.what)
        try:
            self.sock = socket.create_connection((host, port), timeout=min(timeout, 10.0))
            self.sock.sendall(TRACKER_MAGIC.to_bytes(4, "little", signed=True))
        except OSError as err:
            raise RemoteError(f"cannot talk to {self.what}: {err.strerror or err}") from None
        magic = self._exactly(4, deadline, "its greeting")
        if int.from_bytes(magic, "little", signed=True) != TRACKER_MAGIC:
            try:  # what else it sent at once, for the message
                self.sock.settimeout(0.2)
                magic += self.sock.recv(28)
            except OSError:
                pass
            raise RemoteError(
                f"{host}:{port} answers, but is not a TVM RPC tracker: it sent {shown(magic)} where a tracker's "
                "greeting belongs (check --rpc-tracker)"
            )

    def _exactly(self, n: int, deadline: float, what: str, late_ok: bool = False) -> bytes:
        """``n`` bytes of the tracker's, all before ``deadline``."""
        got = bytearray()
        while len(got) < n:
            left = deadline - time.monotonic()
            if left <= 0:
                if late_ok and not got:
                    raise _Late(0)
                sent = f"only {len(got)} of the {n} bytes of {what}" if got else f"nothing of {what}"
                raise RemoteError(
                    f"{self.what} sent {sent} within {self.timeout:g} s (--rpc-timeout): it stalls or trickles "
                    "(is it a TVM RPC tracker?)"
                )
            self.sock.settimeout(left)
            try:
                chunk = self.sock.recv(min(n - len(got), 1 << 16))
            except TimeoutError:
                continue
            except OSError as err:
                raise RemoteError(f"lost {self.what} while reading {what}: {err.strerror or err}") from None
            if not chunk:
                raise RemoteError(f"{self.what} closed the connection after {len(got)} of the {n} bytes of {what}")
            got += chunk
        return bytes(got)

    def _send(self, value: list) -> None:
        data = json.dumps(value).encode()
        try:
            self.sock.sendall(len(data).to_bytes(4, "little") + data)
        except OSError as err:
            raise RemoteError(f"lost {self.what}: {err.strerror or err}") from None

    def _receive(self, deadline: float, what: str, late_ok: bool = False) -> object:
        """One JSON message of the tracker's (``late_ok``: _Late if none began by ``deadline``)."""
        head = self._exactly(4, deadline, what, late_ok)
        n = int.from_bytes(head, "little", signed=True)
        if not 0 <= n <= MAX_TRACKER_MESSAGE:
            raise RemoteError(
                f"{self.what} announced {what} of {size_text(n) if n >= 0 else n} (at most "
                f"{size_text(MAX_TRACKER_MESSAGE)} are accepted): is it a TVM RPC tracker?"
            )
        body = self._exactly(n, deadline, what)
        try:
            return json.loads(body.decode("utf-8"))
        except (UnicodeDecodeError, ValueError, RecursionError):
            raise RemoteError(f"{self.what} sent {shown(body)} as {what}, which is not JSON") from None

    def ask(self, key: str) -> None:
        self._send([_TRACKER_REQUEST, key, "", 1])

    def answer(self, deadline: float) -> tuple[str, int, str] | None:
        """The device the tracker hands out before ``deadline``, or None."""
        try:
            value = self._receive(deadline, "its answer", late_ok=True)
        except _Late:
            return None
        device = value[1] if isinstance(value, list) and len(value) == 2 and value[0] == _TRACKER_SUCCESS else None
        if (
            isinstance(device, list)
            and len(device) == 3
            and isinstance(device[0], str)
            and 0 < len(device[0]) <= 255
            and isinstance(device[1], int)
            and 0 < device[1] < 65536
            and isinstance(device[2], str)
            and len(device[2]) <= 4096
        ):
            return device[0], device[1], device[2]
        raise RemoteError(
            f"{self.what} answered the request for a device with {shown(json.dumps(value).encode(), 80)}, "
            "not a device's address"
        )

    def summary(self) -> dict:
        self._send([_TRACKER_SUMMARY])
        value = self._receive(time.monotonic() + 10.0, "its summary")
        if isinstance(value, list) and len(value) == 2 and value[0] == _TRACKER_SUCCESS and isinstance(value[1], dict):
            return value[1]
        return {}

    def close(self) -> None:
        self.sock.close()


def _pool_text(host: str, port: int, key: str, timeout: float) -> str:
    """What the tracker says about ``key``'s devices, for the message of a timeout."""
    try:
        tracker = _Tracker(host, port, time.monotonic() + min(timeout, 10.0), timeout)
        try:
            servers = tracker.summary().get("server_info", [])
        finally:
            tracker.close()
    except Exception:  # noqa: BLE001 - the message is complete without it
        return ""
    if not isinstance(servers, list):
        return ""
    keys = [str(s.get("key", "")).removeprefix("server:") for s in servers if isinstance(s, dict)]
    registered = keys.count(key)
    if not registered:
        others = ", ".join(sorted(set(keys))) or "none"
        return f"; no device is registered with that key (keys with devices: {others})"
    return f"; all {registered} device(s) of that key are busy"


def open_devices(req: RemoteRequest, max_packet: int = MAX_PACKET) -> list[Device]:
    """The devices of the request, each with a live session, or RemoteError naming the server
    or key and what to do (``max_packet``: the largest answer a device may send, in bytes)."""
    if req.rpc is not None:
        host, port = req.rpc
        what = f"the RPC server at {host}:{port}"
        session, relay = _connect(host, port, "", req.timeout, what, max_packet)
        return [Device(session, f"{host}:{port}", None, _describe(session, relay, what), relay)]
    assert req.tracker is not None and req.key is not None
    host, port = req.tracker
    deadline = time.monotonic() + req.timeout
    trackers: list[_Tracker] = []
    try:  # the tracker keeps a device for the request while its socket is open
        for _ in range(req.devices):
            trackers.append(_Tracker(host, port, deadline, req.timeout))
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
            what = f"device {dev_host}:{dev_port} (key {req.key!r}, handed out by the tracker {host}:{port})"
            session, relay = _connect(dev_host, dev_port, match, req.timeout, what, max_packet)
            info = _describe(session, relay, what)
            devices.append(Device(session, f"{dev_host}:{dev_port}", req.key, info, relay))
        return devices
    finally:
        for t in trackers:
            t.close()  # an unanswered request leaves the tracker's queue with its socket

"""What the user asked of remote devices (``--rpc``, ``--rpc-tracker``, ``--rpc-key``,
``--rpc-timeout``, ``--devices``, ``--cc``); free of TVM so that the CLI checks it before
anything is compiled."""

from __future__ import annotations

from dataclasses import dataclass

from tvm_explorer.errors import ExplorerError

DEFAULT_TIMEOUT = 60.0  # seconds to wait for a device, and for each RPC step


@dataclass
class RemoteRequest:
    """One RPC server (``rpc``) or ``devices`` devices of ``key`` from a tracker."""

    rpc: tuple[str, int] | None = None
    tracker: tuple[str, int] | None = None
    key: str | None = None
    timeout: float = DEFAULT_TIMEOUT
    devices: int = 1
    cc: str | None = None  # the C compiler that links the library for the device

    def where(self) -> str:
        """``the RPC server at host:port`` or ``key K at the tracker host:port``."""
        if self.rpc is not None:
            return f"the RPC server at {self.rpc[0]}:{self.rpc[1]}"
        assert self.tracker is not None
        return f"key {self.key!r} at the tracker {self.tracker[0]}:{self.tracker[1]}"


def address(text: str, flag: str) -> tuple[str, int]:
    """``HOST:PORT`` of a flag, or ExplorerError saying what is wrong."""
    host, sep, port = text.rpartition(":")
    if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise ExplorerError(f"{flag} {text!r}: expected HOST:PORT (e.g. 127.0.0.1:9190)")
    return host, int(port)


def from_options(rpc, tracker, key, timeout, devices, cc) -> RemoteRequest | None:
    """The request of the command-line flags, or None when no remote flag was given; raises
    ExplorerError on a combination that cannot work."""
    if rpc is None and tracker is None:
        for flag, value in (("--rpc-key", key), ("--cc", cc), ("--devices", devices if devices != 1 else None)):
            if value is not None:
                raise ExplorerError(
                    f"{flag} is for measuring on a device: add --rpc HOST:PORT or --rpc-tracker HOST:PORT"
                )
        return None
    if rpc is not None and tracker is not None:
        raise ExplorerError("--rpc and --rpc-tracker: give one (a single RPC server, or a tracker's pool)")
    if tracker is not None and not key:
        raise ExplorerError("--rpc-tracker needs --rpc-key KEY: the key the devices registered with")
    if rpc is not None and key:
        raise ExplorerError("--rpc-key is for --rpc-tracker; --rpc names one server directly")
    if devices < 1:
        raise ExplorerError(f"--devices {devices}: needs at least 1")
    if devices > 1 and tracker is None:
        raise ExplorerError(f"--devices {devices} needs --rpc-tracker: one --rpc server is one device")
    if not timeout > 0:
        raise ExplorerError(f"--rpc-timeout {timeout:g}: needs a number of seconds above 0")
    return RemoteRequest(
        rpc=address(rpc, "--rpc") if rpc is not None else None,
        tracker=address(tracker, "--rpc-tracker") if tracker is not None else None,
        key=key,
        timeout=timeout,
        devices=devices,
        cc=cc,
    )

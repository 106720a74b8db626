"""Hostile TVM RPC servers and trackers on loopback: plain sockets that speak just enough of
TVM's protocols to get past the first step, then misbehave (garbage where the magic belongs,
a 2 GB key length, a terabyte packet, a byte now and then, silence, JSON of the wrong shape).

The protocols (TVM 0.27): an RPC server answers a client's ``magic, key length, key`` with
``magic`` (0xFF271), its own key length and key, then packets of an 8-byte length and that
many bytes; a tracker answers a client's magic (0x2F271) with its own, then JSON messages of a
4-byte length each (a request ``[4, key, "", 1]`` is answered ``[0, [host, port, match]]``).
"""

from __future__ import annotations

import json
import socket
import struct
import threading
import time

RPC_MAGIC = 0xFF271
TRACKER_MAGIC = 0x2F271


class Hostile:
    """A loopback server that hands every connection to ``behaviour(conn, stop)``."""

    def __init__(self, behaviour):
        self.behaviour = behaviour
        self.stop = threading.Event()
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.port = self.sock.getsockname()[1]
        self.address = f"127.0.0.1:{self.port}"
        self.conns: list[socket.socket] = []
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        self.sock.settimeout(0.2)
        while not self.stop.is_set():
            try:
                conn, _ = self.sock.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            self.conns.append(conn)
            threading.Thread(target=self._one, args=(conn,), daemon=True).start()

    def _one(self, conn: socket.socket) -> None:
        try:
            self.behaviour(conn, self.stop)
            self.stop.wait()  # then hold the connection open, saying nothing more
        except OSError:
            pass
        finally:
            conn.close()

    def close(self) -> None:
        self.stop.set()
        self.sock.close()
        for conn in self.conns:
            try:
                conn.close()
            except OSError:
                pass

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def _read(conn: socket.socket, n: int) -> bytes:
    got = b""
    while len(got) < n:
        chunk = conn.recv(n - len(got))
        if not chunk:
            raise OSError("closed")
        got += chunk
    return got


def _client_greeting(conn: socket.socket) -> None:
    """Read an RPC client's magic, key length and key."""
    _read(conn, 4)
    (n,) = struct.unpack("<i", _read(conn, 4))
    _read(conn, n)


def _drip(conn: socket.socket, stop: threading.Event, data: bytes, every: float = 0.2) -> None:
    for i in range(len(data)):
        if stop.wait(every):
            return
        conn.sendall(data[i : i + 1])


def _greeting(key_length: int = 0) -> bytes:
    return struct.pack("<ii", RPC_MAGIC, key_length)


# RPC servers (--rpc, and devices a tracker hands out)
def rpc_garbage(conn, stop):
    _client_greeting(conn)
    conn.sendall(b"HTTP/1.1 400 Bad Request\r\n\r\n")


def rpc_huge_key(conn, stop):
    _client_greeting(conn)
    conn.sendall(_greeting(0x7FFFFFF0))  # 2.1 GB of key to come


def rpc_huge_packet(conn, stop):
    _client_greeting(conn)
    conn.sendall(_greeting(0))
    _read(conn, 8)  # the length of the client's first packet
    conn.sendall(struct.pack("<Q", 1 << 40))  # a terabyte of answer to come


def rpc_drip(conn, stop):
    _client_greeting(conn)
    conn.sendall(_greeting(4000))  # a key that is allowed, sent a byte at a time
    _drip(conn, stop, b"k" * 4000)


def rpc_silent(conn, stop):
    _client_greeting(conn)


# Trackers (--rpc-tracker)
def _tracker_start(conn) -> None:
    _read(conn, 4)
    conn.sendall(struct.pack("<i", TRACKER_MAGIC))


def _json(value) -> bytes:
    data = json.dumps(value).encode()
    return struct.pack("<i", len(data)) + data


def tracker_garbage(conn, stop):
    _read(conn, 4)
    conn.sendall(b"SSH-2.0-OpenSSH_9.6\r\n")


def tracker_silent(conn, stop):
    _read(conn, 4)


def tracker_huge(conn, stop):
    _tracker_start(conn)
    conn.sendall(struct.pack("<i", 0x7FFFFFF0))


def tracker_drip(conn, stop):
    _tracker_start(conn)
    _drip(conn, stop, _json([0, ["127.0.0.1", 9, "x" * 1000]]))


def tracker_wrong_shape(conn, stop):
    _tracker_start(conn)
    conn.sendall(_json([0, "a device"]))


def tracker_handing_out(port: int):
    """A tracker that hands out the RPC server at ``port`` (itself hostile)."""

    def behaviour(conn, stop):
        _tracker_start(conn)
        conn.sendall(_json([0, ["127.0.0.1", port, "match"]]))

    return behaviour


def wait_until(predicate, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.05)
    return False

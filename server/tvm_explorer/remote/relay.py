"""What a device may send, bounded: a relay on loopback between TVM's RPC client and a device.

TVM's client (C++) reads a device's answers with blocking reads and no time limit, and trusts
every length it is sent: a server that stays silent or sends a byte now and then holds a
compile until its ``--timeout``; a 4-byte key length of two billion makes it allocate that
much; a packet length of a terabyte fails an allocation that is then taken for the memory
limit. So TVM's client talks to a relay of ours instead, which forwards both ways and reads
the device's side of TVM's RPC protocol as it passes: the greeting (TVM's magic, a key of at
most MAX_KEY_BYTES), then packets (an 8-byte length, at most ``max_packet``, and their bytes).
Every answer must be complete within ``timeout`` seconds of the request it answers, and every
packet within ``timeout`` of its first byte; what the device sends between requests counts
from its first byte too. On any breach the relay records what the device sent (``problem``)
and closes both connections: TVM's client fails at once, and the caller reports ``problem``.

The relay is a child process (``python -P -m tvm_explorer.remote.relay``), not a thread: some
of TVM's RPC calls block in the socket while holding Python's GIL, and a relay thread would
wait for them as they wait for it. It says its port, and later what went wrong, on a line of
its standard output each; it ends when TVM's client closes its connection (the session is
over, or this process is gone). No TVM here: the relay moves bytes.
"""

from __future__ import annotations

import os
import select
import selectors
import socket
import subprocess
import sys
import time

from tvm_explorer.supervise.child_python import python_module_command

RPC_MAGIC = 0xFF271  # TVM's kRPCMagic (src/runtime/rpc/rpc_endpoint.h); +1: key in use, +2: key mismatch
MAX_KEY_BYTES = 4096
MAX_PACKET = 64 << 20  # a device's answers are small, but for a tensor it sends back (see max_packet)
_CHUNK = 1 << 16
_BUFFERED = 1 << 20  # bytes held for the slower side before reading more from the other
_POLL = 0.5  # seconds between looks at whether the relay was closed


def shown(data: bytes, limit: int = 24) -> str:
    """Bytes a device sent, as a short readable literal (``b'HTTP/1.1 200 OK\\r\\n'…``)."""
    return repr(bytes(data[:limit])) + ("…" if len(data) > limit else "")


def size_text(n: int) -> str:
    """``2.5 GB``, ``512 bytes``."""
    if n < 10_000:
        return f"{n} bytes"
    for unit, scale in (("TB", 1e12), ("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if n >= scale:
            return f"{n / scale:.3g} {unit}"
    return f"{n} bytes"


class _DeviceStream:
    """The device's side of TVM's RPC protocol, checked as it arrives: ``feed`` returns the
    bytes that may go on to the client, or raises ValueError saying what was wrong."""

    def __init__(self, max_packet: int):
        self.max_packet = max_packet
        self.state = "greeting"  # greeting, key length, key, length, body, done
        self.need = 4
        self.head = bytearray()  # a header being read
        self.got = 0  # bytes of the current unit (greeting and key, or packet) so far
        self.expected = 4  # bytes the current unit has in all, as far as known
        self.completed = 0  # units complete so far

    @property
    def partway(self) -> bool:
        """Whether a unit has begun and is not complete."""
        return self.got > 0

    def feed(self, data: bytes) -> bytes:
        out = bytearray()
        at = 0
        while at < len(data):
            take = min(self.need, len(data) - at)
            piece = data[at : at + take]
            at += take
            self.need -= take
            self.got += take
            if self.state == "done":
                out += piece  # after a refusal TVM's client closes: nothing is read any more
                continue
            if self.state == "body" or self.state == "key":
                out += piece
            else:
                self.head += piece
            if self.need == 0:
                out += self._header_done(data[at : at + 32])
        return bytes(out)

    def _header_done(self, after: bytes) -> bytes:
        """The unit's next part, after ``need`` bytes of it; the header bytes to forward
        (``after``: what came next, for a message about what was sent)."""
        head, state = bytes(self.head), self.state
        self.head.clear()
        if state == "greeting":
            code = int.from_bytes(head, "little", signed=True)
            if code in (RPC_MAGIC + 1, RPC_MAGIC + 2):  # TVM's own refusals: its client says them
                self.state, self.need = "done", 1 << 62
                return head
            if code != RPC_MAGIC:
                raise ValueError(
                    f"sent {shown(head + after)} where a TVM RPC server's greeting belongs: not a TVM RPC server"
                )
            self.state, self.need, self.expected = "key length", 4, 8
            return head
        if state == "key length":
            n = int.from_bytes(head, "little", signed=True)
            if not 0 <= n <= MAX_KEY_BYTES:
                raise ValueError(
                    f"announced a key of {size_text(n) if n >= 0 else n} (at most {MAX_KEY_BYTES} bytes are accepted)"
                )
            self.expected += n
            if n:
                self.state, self.need = "key", n
            else:
                self._complete()
            return head
        if state == "length":
            n = int.from_bytes(head, "little")
            if n > self.max_packet:
                raise ValueError(
                    f"announced a reply of {size_text(n)} (at most {size_text(self.max_packet)} are accepted here)"
                )
            self.expected = 8 + n
            if n:
                self.state, self.need = "body", n
            else:
                self._complete()
            return head
        self._complete()  # the key, or a packet's body
        return b""

    def _complete(self) -> None:
        self.state, self.need, self.got, self.expected = "length", 8, 0, 8
        self.completed += 1


class Relay:
    """A loopback port (``port``) that forwards to ``host:port`` within the bounds above, in a
    child process; ``problem`` says what the device did wrong, once it did."""

    def __init__(self, host: str, port: int, timeout: float, max_packet: int = MAX_PACKET):
        command = python_module_command("tvm_explorer.remote.relay", host, str(port), repr(timeout), str(max_packet))
        self._proc = subprocess.Popen(
            command, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, bufsize=0
        )
        assert self._proc.stdout is not None
        self._out = self._proc.stdout
        self._problem: str | None = None
        line = self._line(wait=30.0)
        if not line.startswith("port "):
            self.close()
            raise OSError(f"the RPC relay did not start ({line or 'no output'})")
        self.port = int(line.split()[1])

    def _line(self, wait: float) -> str:
        """The relay's next line, waiting at most ``wait`` seconds for it ("" if none)."""
        ready, _, _ = select.select([self._out], [], [], wait)
        return self._out.readline().decode("utf-8", "replace").rstrip("\n") if ready else ""

    @property
    def problem(self) -> str | None:
        """What the device did wrong (written before the relay closed the connections, so it
        is there when TVM's client fails), or None."""
        if self._problem is None:
            line = self._line(wait=0.0)
            if line.startswith("problem "):
                self._problem = line[len("problem ") :]
        return self._problem

    def close(self) -> None:
        """Stop relaying (the session is over)."""
        if self._proc.poll() is None:
            self._proc.kill()
        self._proc.wait()


class _Forwarder:
    """The relay's work, in the child: accept TVM's client, connect to the device, forward."""

    def __init__(self, host: str, port: int, timeout: float, max_packet: int):
        self.device = (host, port)
        self.timeout = timeout
        self.problem: str | None = None
        self._stream = _DeviceStream(max_packet)
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port = self._listener.getsockname()[1]

    def _fail(self, problem: str) -> None:
        if self.problem is None:
            self.problem = problem
            line = "problem " + " ".join(problem.split()) + "\n"
            os.write(1, line.encode("utf-8", "replace"))  # before the connections close

    def run(self) -> None:
        client = device = None
        try:
            self._listener.settimeout(max(self.timeout, 10.0))
            try:
                client, _ = self._listener.accept()  # TVM's client, connecting right after we start
            except OSError:
                return
            finally:
                self._listener.close()
            try:
                device = socket.create_connection(self.device, timeout=min(self.timeout, 10.0))
            except (OSError, UnicodeError, ValueError) as err:  # a host name IDNA cannot encode too
                self._fail(f"cannot be reached ({getattr(err, 'strerror', None) or err})")
                return
            self._relay(client, device)
        except Exception as err:  # noqa: BLE001 - the relay's end is the session's: said, not raised
            self._fail(f"broke the connection ({err})")
        finally:
            for sock in (client, device):
                if sock is not None:
                    sock.close()

    def _relay(self, client: socket.socket, device: socket.socket) -> None:
        client.setblocking(False)
        device.setblocking(False)
        to_device = bytearray()
        to_client = bytearray()
        asked_at: float | None = None  # when the request now unanswered was sent
        begun_at: float | None = None  # when the unit now arriving began
        stream = self._stream
        with selectors.DefaultSelector() as sel:
            while True:
                want = {client: 0, device: 0}
                if len(to_device) < _BUFFERED:
                    want[client] |= selectors.EVENT_READ
                if len(to_client) < _BUFFERED:
                    want[device] |= selectors.EVENT_READ
                if to_device:
                    want[device] |= selectors.EVENT_WRITE
                if to_client:
                    want[client] |= selectors.EVENT_WRITE
                for sock, events in want.items():
                    if _registered(sel, sock):
                        if events:
                            sel.modify(sock, events)
                        else:
                            sel.unregister(sock)
                    elif events:
                        sel.register(sock, events)
                now = time.monotonic()
                starts = [t for t in (asked_at, begun_at) if t is not None]
                wait = min(starts) + self.timeout - now if starts else _POLL
                ready = sel.select(timeout=max(0.0, min(wait, _POLL)))
                now = time.monotonic()
                for key, events in ready:
                    fileobj = key.fileobj
                    assert isinstance(fileobj, socket.socket)  # only sockets are registered
                    sock = fileobj
                    if events & selectors.EVENT_READ:
                        try:
                            data = sock.recv(_CHUNK)
                        except BlockingIOError:
                            data = None
                        except OSError as err:
                            data = b""
                            if sock is device:
                                self._fail(f"broke the connection ({err.strerror or err})")
                        if data is not None and not data:  # an end of the connection
                            if sock is device:
                                self._fail(self._closed_text(stream))
                            return  # TVM's client closed: the session is over
                        if data and sock is client:
                            to_device += data
                            if asked_at is None:
                                asked_at = now
                        elif data:
                            before = stream.completed
                            if not stream.partway and begun_at is None:
                                begun_at = now
                            try:
                                to_client += stream.feed(data)
                            except ValueError as err:
                                self._fail(str(err))
                                return
                            if stream.completed > before:
                                asked_at = now if to_device else None
                                begun_at = now if stream.partway else None
                    if events & selectors.EVENT_WRITE:
                        buffer = to_device if sock is device else to_client
                        try:
                            sent = sock.send(buffer)
                        except BlockingIOError:
                            sent = 0
                        except OSError as err:
                            if sock is device:
                                self._fail(f"broke the connection ({err.strerror or err})")
                            return
                        del buffer[:sent]
                late = [t for t in (asked_at, begun_at) if t is not None and now - t > self.timeout]
                if late:
                    self._fail(self._late_text(stream, to_device))
                    return

    def _late_text(self, stream: _DeviceStream, unsent: bytearray) -> str:
        within = f"within {self.timeout:g} s (--rpc-timeout)"
        if unsent:
            return f"did not take the {size_text(len(unsent))} sent to it {within}"
        if stream.partway:
            what = "greeting" if stream.state in ("greeting", "key length", "key") else "reply"
            return f"sent only {stream.got} of the {stream.expected} bytes of its {what} {within}"
        if stream.completed == 0:
            return f"sent nothing {within} of being asked to open a session"
        return f"did not answer a request {within}"

    @staticmethod
    def _closed_text(stream: _DeviceStream) -> str:
        if stream.partway:
            return f"closed the connection after {stream.got} of the {stream.expected} bytes of an answer"
        return "closed the connection"


def _registered(sel: selectors.BaseSelector, sock: socket.socket) -> bool:
    try:
        sel.get_key(sock)
    except KeyError:
        return False
    return True


def main(argv: list[str]) -> int:
    """``python -m tvm_explorer.remote.relay HOST PORT TIMEOUT MAX_PACKET``."""
    host, port, timeout, max_packet = argv[0], int(argv[1]), float(argv[2]), int(argv[3])
    forwarder = _Forwarder(host, port, timeout, max_packet)
    os.write(1, f"port {forwarder.port}\n".encode())
    forwarder.run()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

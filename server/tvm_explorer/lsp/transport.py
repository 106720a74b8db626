"""Reading LSP messages off a byte stream without trusting their headers.

pygls 2.1's reader allocates whatever ``Content-Length`` claims in one piece (``10**12``
raised MemoryError, ``10**20`` OverflowError, and either ended the process) and drops a body
that is not JSON without a reply. This loop reads headers and bodies in bounded pieces, skips a
message longer than ``MAX_MESSAGE_BYTES`` (declared length, read and thrown away in chunks, so
the stream stays in step), answers a body that is not JSON with a Parse error (-32700,
``id: null``, as JSON-RPC says) and hands everything else to the protocol.
"""

from __future__ import annotations

import asyncio
import json
import logging
import re

from lsprotocol import types

from tvm_explorer.navigation.background import REQUESTS

logger = logging.getLogger(__name__)

MAX_MESSAGE_BYTES = 512 * 1024**2
"""Largest message body the server reads (bundle documents are at most 256 MiB, JSON-escaped
text of one opened in the editor fits); longer ones are skipped with a log line."""
MAX_HEADER_LINE = 8192
CHUNK = 1 << 20
_CONTENT_LENGTH = re.compile(rb"content-length:\s*(\d+)\s*", re.IGNORECASE)


class StdinReader:
    """Blocking reads of a binary stream, run in an executor so the event loop keeps going."""

    def __init__(self, stream, executor):
        self.stream = stream
        self.executor = executor

    def readline(self, limit: int):
        """At most ``limit`` bytes, up to and including a newline (b"" at the end)."""
        return asyncio.get_running_loop().run_in_executor(self.executor, self._readline, limit)

    def _readline(self, limit: int) -> bytes:
        line = self.stream.readline(limit)
        REQUESTS.arriving()  # before the hand-over to the event loop: warm-ups pause now
        return line

    def read(self, n: int):
        """Up to ``n`` bytes (fewer only at the end of the stream)."""
        return asyncio.get_running_loop().run_in_executor(self.executor, self.stream.read, n)


class StreamReaderAdapter:
    """The same interface over an ``asyncio.StreamReader`` (TCP)."""

    def __init__(self, reader: asyncio.StreamReader):
        self.reader = reader

    async def readline(self, limit: int) -> bytes:
        """At most about ``limit`` bytes, up to and including a newline."""
        try:
            line = await self.reader.readuntil(b"\n")
            REQUESTS.arriving()
            return line
        except asyncio.IncompleteReadError as err:
            return err.partial
        except asyncio.LimitOverrunError as err:
            return await self.reader.read(min(err.consumed or limit, limit))

    async def read(self, n: int) -> bytes:
        """Up to ``n`` bytes (fewer only at the end of the stream)."""
        try:
            return await self.reader.readexactly(n)
        except asyncio.IncompleteReadError as err:
            return err.partial


async def _read_headers(reader) -> tuple[list[bytes], bool] | None:
    """Header lines of one message (without the blank line ending them); None at the end
    of the stream. The flag says a header line was too long (and was skipped)."""
    lines: list[bytes] = []
    too_long = False
    while True:
        line = await reader.readline(MAX_HEADER_LINE)
        if not line:
            return None
        if not line.endswith(b"\n"):
            # A header line longer than any real one: skip the rest of it in pieces.
            too_long = True
            while line and not line.endswith(b"\n"):
                line = await reader.readline(MAX_HEADER_LINE)
            if not line:
                return None
            continue
        if not line.strip():
            if lines or too_long:
                return lines, too_long
            continue  # stray blank lines between messages
        lines.append(line)


async def _skip(reader, n: int) -> bool:
    """Read and drop ``n`` bytes in chunks; False if the stream ended first."""
    while n > 0:
        chunk = await reader.read(min(n, CHUNK))
        if not chunk:
            return False
        n -= len(chunk)
    return True


async def _read_body(reader, n: int) -> bytes | None:
    """Exactly ``n`` bytes read in chunks (memory grows with what arrives, not with ``n``);
    None if the stream ended first."""
    chunks, left = [], n
    while left > 0:
        chunk = await reader.read(min(left, CHUNK))
        if not chunk:
            return None
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)


def _length_of(headers: list[bytes]) -> int | None:
    for line in headers:
        match = _CONTENT_LENGTH.fullmatch(line)
        if match:
            digits = match.group(1)
            # Thousands of digits would not even convert (int() refuses over 4300): any length
            # that long is just "too long".
            return 10**30 if len(digits) > 30 else int(digits)
    return None


async def serve_stream(reader, protocol, stop) -> None:
    """Read messages from ``reader`` and hand them to ``protocol`` until the stream ends or
    ``stop`` (a threading.Event) is set."""
    while not stop.is_set():
        got = await _read_headers(reader)
        if got is None:
            return
        headers, too_long = got
        length = _length_of(headers)
        if length is None:
            logger.error(
                "message without a readable Content-Length header dropped%s",
                " (a header line was too long)" if too_long else "",
            )
            _log_to_client(protocol, "TVM Explorer: dropped a message without a readable Content-Length header")
            continue
        if length > MAX_MESSAGE_BYTES:
            logger.error("message of %d bytes refused (limit %d); skipping it", length, MAX_MESSAGE_BYTES)
            _log_to_client(
                protocol, f"TVM Explorer: refused a message of {length} bytes (the limit is {MAX_MESSAGE_BYTES} bytes)"
            )
            if not await _skip(reader, length):
                return
            continue
        body = await _read_body(reader, length)
        if body is None:
            return
        try:
            message = json.loads(body, object_hook=protocol.structure_message)
            del body  # not kept until the next message arrives (an opened file: megabytes)
        except (ValueError, RecursionError) as err:  # JSONDecodeError, bad UTF-8, too deep
            logger.error("message is not JSON: %s", err)
            protocol.send_parse_error(str(err))
            continue
        except Exception:
            logger.exception("unable to read message")
            continue
        try:
            protocol.handle_message(message)
        except SystemExit:
            raise
        except Exception:
            logger.exception("unable to handle message")
        del message


def _log_to_client(protocol, message: str) -> None:
    try:
        protocol.notify(types.WINDOW_LOG_MESSAGE, types.LogMessageParams(type=types.MessageType.Error, message=message))
    except Exception:  # the log line above is the report that matters
        logger.exception("cannot send window/logMessage")


def serve_stdio(server, stdin=None, stdout=None) -> int:
    """Run ``server`` (a pygls server) on stdin/stdout until the input ends or ``exit``;
    returns the exit status the protocol decided (0 when the input just ended)."""
    import sys
    import threading

    from pygls.io_ import StdoutWriter

    server._stop_event = stop = threading.Event()
    reader = StdinReader(stdin or sys.stdin.buffer, server.thread_pool)
    server.protocol.set_writer(StdoutWriter(stdout or sys.stdout.buffer))
    try:
        asyncio.run(serve_stream(reader, server.protocol, stop))
    except BrokenPipeError:
        logger.error("connection to the client is lost; shutting down")
    except (KeyboardInterrupt, SystemExit):
        pass
    finally:
        server.shutdown()
    return _status(server)


def serve_tcp(server, host: str, port: int) -> int:
    """Run ``server`` on a TCP port (the connection's messages go through the same reader)."""
    import threading

    server._stop_event = stop = threading.Event()

    async def connection(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        server.protocol.set_writer(writer)
        await serve_stream(StreamReaderAdapter(reader), server.protocol, stop)
        server._server.close()

    async def main() -> None:
        server._server = await asyncio.start_server(connection, host, port)
        async with server._server:
            try:
                await server._server.serve_forever()
            except asyncio.CancelledError:
                pass

    try:
        asyncio.run(main())
    except (KeyboardInterrupt, SystemExit):
        pass
    finally:
        server.shutdown()
    return _status(server)


def _status(server) -> int:
    code = getattr(server.protocol, "exit_code", None)
    return 0 if code is None else code

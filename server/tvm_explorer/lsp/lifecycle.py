"""The LSP lifecycle as the specification states it, and an answer for every request.

pygls 2.1 answers a request before ``initialize`` like any other (``null``), drops requests
after ``shutdown`` without a reply, lets ``exit`` end the process with status 0 whatever came
before, and when a reply cannot be serialized (an outline nested deeper than the recursion
limit) only logs it: the client waits forever. ``LifecycleProtocol`` (mixed into the
protocol class) does what the specification says instead:

- before ``initialize``: requests get ServerNotInitialized (-32002), notifications other
  than ``exit`` are dropped;
- after ``shutdown``: requests get InvalidRequest (-32600), notifications other than
  ``exit`` are dropped;
- ``exit`` ends the server with status 0 after ``shutdown``, 1 without;
- a message that is JSON but not a JSON-RPC 2.0 message (``envelope_problem``: ``"jsonrpc"``
  not ``"2.0"``, a ``method`` that is not a string, an ``id`` neither integer nor string,
  ``params`` neither object nor array) gets InvalidRequest, with its id when usable, else
  ``null`` (pygls never answered ``"jsonrpc": "1.0"`` under its id, and answered a non-string
  method with InternalError and a traceback);
- no error reply carries a traceback (it goes to the log);
- a reply that cannot be serialized is replaced by an InternalError reply naming why.
"""

from __future__ import annotations

import inspect
import json
import logging
from typing import TYPE_CHECKING

import attrs
from lsprotocol import types
from pygls.exceptions import JsonRpcInternalError

if TYPE_CHECKING:
    # What the mixin is mixed into (it relies on its attributes and calls its methods).
    from pygls.protocol import JsonRPCProtocol as _Mixed
else:
    _Mixed = object

logger = logging.getLogger(__name__)

SERVER_NOT_INITIALIZED = -32002
INVALID_REQUEST = -32600
PARSE_ERROR = -32700
INTERNAL_ERROR = -32603


def _error(msg_id, code: int, message: str) -> dict:
    return {"jsonrpc": "2.0", "id": msg_id, "error": {"code": code, "message": message}}


def usable_id(msg_id):
    """A request id as LSP allows it (integer or string), else None."""
    if isinstance(msg_id, str) or (isinstance(msg_id, int) and not isinstance(msg_id, bool)):
        return msg_id
    return None


def envelope_problem(data: dict) -> str | None:
    """Why a decoded message is not a JSON-RPC 2.0 message (None if it is one)."""
    if data.get("jsonrpc") != "2.0":
        return "not a JSON-RPC 2.0 message ('jsonrpc' must be \"2.0\")"
    if "id" in data and data["id"] is not None and usable_id(data["id"]) is None:
        return "'id' must be an integer or a string"
    if "method" in data:
        if not isinstance(data["method"], str):
            return "'method' must be a string"
        if "params" in data and data["params"] is not None and not isinstance(data["params"], (dict, list)):
            return "'params' must be an object or an array"
    elif "id" not in data or ("result" not in data and "error" not in data):
        return "neither a request, a notification nor a response"
    return None


def invalid_request(data, problem: str) -> dict:
    """The InvalidRequest answer to a message (its id when usable, null otherwise)."""
    msg_id = usable_id(data.get("id")) if isinstance(data, dict) else None
    return _error(msg_id, INVALID_REQUEST, f"Invalid Request: {problem}")


class LifecycleProtocol(_Mixed):
    """Mixin for a pygls ``JsonRPCProtocol`` subclass (put it before the pygls class)."""

    exit_code: int | None = None
    _initialize_seen = False

    def handle_message(self, message):
        """Route a message according to the lifecycle state."""
        method = getattr(message, "method", None)
        has_id = hasattr(message, "id")
        if getattr(message, "jsonrpc", None) != "2.0":
            self._send_data(invalid_request(message, "not a JSON-RPC 2.0 message"))
            return
        if method is None:  # a response to one of our requests: always taken
            super().handle_message(message)
            return
        if method == types.EXIT:
            self._exit()
            return
        if method == types.INITIALIZE and has_id:
            self._initialize_seen = True
        elif not self._initialize_seen:
            if has_id:
                self._send_data(
                    _error(message.id, SERVER_NOT_INITIALIZED, f"{method}: the server is not initialized yet")
                )
            else:
                logger.warning("notification %s before initialize dropped", method)
            return
        if self._shutdown:
            if has_id:
                self._send_data(_error(message.id, INVALID_REQUEST, f"{method}: the server is shutting down"))
            else:
                logger.warning("notification %s after shutdown dropped", method)
            return
        super().handle_message(message)

    def _send_response(self, msg_id, result=None, error=None):
        """Send a reply; a failed handler's traceback (pygls puts it in ``error.data``) goes
        to the log, not to the client."""
        data = getattr(error, "data", None)
        if isinstance(data, dict) and "traceback" in data:
            logger.error("request %r failed: %s\n%s", msg_id, error.message, "".join(map(str, data["traceback"])))
            error = attrs.evolve(error, data=None)
        super()._send_response(msg_id, result, error)

    def _exit(self) -> None:
        self.exit_code = 0 if self._shutdown else 1
        logger.info("exit (status %d)", self.exit_code)
        stop = getattr(self._server, "_stop_event", None)
        if stop is not None:
            stop.set()

    def send_parse_error(self, detail: str) -> None:
        """Reply to a message that is not JSON (JSON-RPC: Parse error, ``id: null``)."""
        self._send_data(_error(None, PARSE_ERROR, f"Parse error: {detail}"))

    def _send_data(self, data):
        """Serialize and send; a reply that cannot be serialized becomes an error reply for
        the same request instead of nothing."""
        if not data:
            return
        try:
            body = json.dumps(data, default=self._serialize_message)
        except Exception as err:  # RecursionError, a type cattrs cannot unstructure, ...
            msg_id = data.get("id") if isinstance(data, dict) else getattr(data, "id", None)
            is_reply = not (isinstance(data, dict) and "method" in data) and not hasattr(data, "method")
            logger.exception("cannot serialize %s", f"reply to {msg_id!r}" if is_reply else "message")
            if not is_reply or msg_id is None:
                return
            body = json.dumps(
                _error(msg_id, INTERNAL_ERROR, f"the answer could not be serialized ({type(err).__name__}: {err})")
            )
        self._write(body)

    def _write(self, body: str) -> None:
        if self.writer is None:
            logger.error("unable to send data, no transport")
            return
        raw = body.encode("utf-8")
        header = f"Content-Length: {len(raw)}\r\nContent-Type: {self.CONTENT_TYPE}; charset={self.CHARSET}\r\n\r\n"
        try:
            res = self.writer.write(header.encode("ascii") + raw)
            if inspect.isawaitable(res):
                import asyncio

                asyncio.ensure_future(res)
        except BrokenPipeError:
            logger.exception("error sending data: broken pipe")
            raise
        except Exception as error:
            logger.exception("error sending data")
            self._server._report_server_error(error, JsonRpcInternalError)  # as pygls' own _send_data

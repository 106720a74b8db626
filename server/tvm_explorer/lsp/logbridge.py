"""The server's log, in the editor: ``tvm_explorer`` log records at INFO and above go to the
client as ``window/logMessage`` (VS Code shows them in the "TVM Explorer" output channel, Neovim
in its LSP log), so that every bundle loaded and every error is visible without a log file.

pygls' own protocol warnings (a cancel for an answered request, an unknown notification) are
routine under a busy editor and are kept out of the editor's log.
"""

from __future__ import annotations

import asyncio
import logging

from lsprotocol import types

PACKAGE = "tvm_explorer"
_KINDS = (
    (logging.ERROR, types.MessageType.Error),
    (logging.WARNING, types.MessageType.Warning),
    (logging.INFO, types.MessageType.Info),
)


class WindowLogHandler(logging.Handler):
    """Sends records as ``window/logMessage`` once ``attach``ed to the server's event loop
    (records from worker threads are handed to the loop)."""

    def __init__(self, server):
        super().__init__(logging.INFO)
        self.server = server
        self.loop: asyncio.AbstractEventLoop | None = None
        self.setFormatter(logging.Formatter("%(message)s"))

    def attach(self, loop: asyncio.AbstractEventLoop) -> None:
        """Start sending (the client is initialized)."""
        self.loop = loop

    def emit(self, record: logging.LogRecord) -> None:
        loop = self.loop
        if loop is None or loop.is_closed():
            return
        try:
            kind = next(k for level, k in _KINDS if record.levelno >= level)
            params = types.LogMessageParams(type=kind, message=self.format(record))
            try:
                here = asyncio.get_running_loop()
            except RuntimeError:
                here = None
            if here is loop:
                self.server.window_log_message(params)
            else:
                loop.call_soon_threadsafe(self.server.window_log_message, params)
        except Exception:  # noqa: BLE001 - logging must never break the server
            self.handleError(record)


class _NotSentToClient(logging.Filter):
    """For stderr handlers: leave out what the client already gets as logMessage (VS Code
    shows the server's stderr in the same channel: each line would appear twice)."""

    def __init__(self, bridge: WindowLogHandler):
        super().__init__()
        self.bridge = bridge

    def filter(self, record: logging.LogRecord) -> bool:
        sent = self.bridge.loop is not None and record.name.startswith(PACKAGE) and record.levelno >= self.bridge.level
        return not sent


def install(server) -> WindowLogHandler:
    """Bridge the package's log to ``server``'s client; call ``attach`` when initialized."""
    bridge = WindowLogHandler(server)
    package = logging.getLogger(PACKAGE)
    package.addHandler(bridge)
    if package.getEffectiveLevel() > logging.INFO:
        package.setLevel(logging.INFO)
    for handler in logging.getLogger().handlers:
        if isinstance(handler, logging.StreamHandler) and not isinstance(handler, logging.FileHandler):
            handler.addFilter(_NotSentToClient(bridge))
    logging.getLogger("pygls.protocol").setLevel(logging.ERROR)
    return bridge

"""Answering a request: wait until the document's bundle is loaded, then look the answer up
(finished off the event loop when the feature asks for it). A failure of a navigation request
answers the feature's empty result (and is logged), not an error response: a bug at one
position must not break the editor's navigation. A request the user asked for by a command
(a comparison, the model graph) fails with an LSP error instead: the feature raises
``RequestFailed`` saying why, and an unexpected failure answers its ``empty``, then a
``RequestFailed`` too. Slow answers are logged with where the time went."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from typing import Any

from lsprotocol import types
from pygls.exceptions import JsonRpcContentModified, JsonRpcException
from pygls.lsp.server import LanguageServer

from tvm_explorer.bundle.files import BundleChanged
from tvm_explorer.lsp.features.bundles import BundleWatcher
from tvm_explorer.lsp.heap import QuietTrim
from tvm_explorer.lsp.shared import OffLoop
from tvm_explorer.navigation.background import REQUESTS

logger = logging.getLogger("tvm_explorer.lsp.server")  # the server's log, as before the split
SLOW_S = 0.02  # requests slower than this (the p99 goal) are logged (debug log) with where the time went


class Answering:
    """Registers request handlers on ``server`` that answer once ``watcher`` has the bundle."""

    def __init__(self, server: LanguageServer, watcher: BundleWatcher):
        self.server = server
        self.watcher = watcher
        self.quiet_trim = QuietTrim()

    def register(self, method: str, handler: Callable[[Any], Any], empty: Any) -> None:
        """Answer ``method`` with ``handler(params)``; ``empty`` when it fails (raised when it is
        an error: the client gets an error response)."""
        watcher, quiet_trim = self.watcher, self.quiet_trim

        async def respond(ls: LanguageServer, params):
            document = (
                params if isinstance(params, types.TextDocumentIdentifier) else getattr(params, "text_document", None)
            )
            t0 = time.perf_counter()
            # Not while waiting for the bundle: its load may be queued behind a warm-up, and a
            # warm-up paused for this request would then never let it come.
            await watcher.wait_for(getattr(document, "uri", None))
            t1 = time.perf_counter()
            try:
                with REQUESTS.request():  # background warm-ups wait meanwhile
                    got = answer_now(params, t0, t1)
                if isinstance(got, OffLoop):
                    got = await finish_off_loop(got)
                return got
            finally:
                quiet_trim.request_done(asyncio.get_running_loop())

        async def finish_off_loop(got: OffLoop):
            try:
                return await asyncio.to_thread(got.finish)
            except JsonRpcException:  # the feature's own error answer (RequestFailed, InvalidParams)
                raise
            except BundleChanged as err:
                raise _content_modified(method, err) from None
            except Exception:
                logger.exception("%s failed", method)
                return failed()

        def failed():
            if isinstance(empty, JsonRpcException):
                raise empty
            return empty

        def answer_now(params, t0: float, t1: float):
            try:
                return handler(params)
            except JsonRpcException:  # the feature's own error answer (RequestFailed, InvalidParams)
                raise
            except BundleChanged as err:
                raise _content_modified(method, err) from None
            except Exception:
                logger.exception("%s failed", method)
                return failed()
            finally:
                t2 = time.perf_counter()
                if t2 - t0 > SLOW_S:
                    document = getattr(params, "text_document", None)
                    position = getattr(params, "position", None)
                    logger.debug(
                        "%s took %.0f ms (waiting for the bundle %.0f ms, answering %.0f ms) at %s %s",
                        method,
                        1000 * (t2 - t0),
                        1000 * (t1 - t0),
                        1000 * (t2 - t1),
                        getattr(document, "uri", "-"),
                        f"{position.line + 1}:{position.character + 1}" if position else "",
                    )

        respond.__name__ = method.replace("/", "_")
        self.server.feature(method)(respond)


def _content_modified(method: str, err: BundleChanged) -> JsonRpcContentModified:
    """A document changed on disk since its bundle was loaded: nothing of the new version is
    mixed into the old one's answer, and no empty answer stands for one either. LSP's
    ContentModified tells the client the answer is void (VS Code asks again); the watcher
    reloads the bundle meanwhile."""
    logger.info("%s: %s", method, err)
    return JsonRpcContentModified(f"the bundle changed on disk: {err}")

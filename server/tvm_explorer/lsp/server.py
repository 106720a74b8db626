"""The language server: the one place that registers handlers and hands them to features."""

from __future__ import annotations

import asyncio
import logging
import time

from lsprotocol import types
from pygls.lsp.server import LanguageServer

from tvm_explorer.bundle.reader import BundleChanged
from tvm_explorer.lsp import transport
from tvm_explorer.lsp.features.bundles import BundleWatcher
from tvm_explorer.lsp.features.codelens import CodeLenses
from tvm_explorer.lsp.features.compare import BundleComparisons
from tvm_explorer.lsp.features.costs import CostRequests
from tvm_explorer.lsp.features.custom import ExplorerRequests
from tvm_explorer.lsp.features.declaration import PreviousStage
from tvm_explorer.lsp.features.definition import Definition
from tvm_explorer.lsp.features.documents import DocumentTracker
from tvm_explorer.lsp.features.highlights import DocumentHighlights
from tvm_explorer.lsp.features.hover import Hover
from tvm_explorer.lsp.features.links import DocumentLinks
from tvm_explorer.lsp.features.model_document import ModelDocument
from tvm_explorer.lsp.features.numerics import Numerics
from tvm_explorer.lsp.features.passes import PassSteps
from tvm_explorer.lsp.features.references import References
from tvm_explorer.lsp.features.reproducers import Reproducers
from tvm_explorer.lsp.features.symbols import DocumentSymbols
from tvm_explorer.lsp.heap import QuietTrim, give_back
from tvm_explorer.lsp.logbridge import install as install_log_bridge
from tvm_explorer.lsp.protocol import (
    COMPARE_BUNDLES,
    COMPARE_LAYER_CODE,
    COSTS,
    EXTRACT_REPRODUCER_COMMAND,
    KERNEL_HEAT,
    LAYER_PLACES,
    LIST_BUNDLES,
    LIST_PASSES,
    MODEL_DOCUMENT,
    NEXT_PASS,
    NUMERICS,
    ORIGINS,
    PREVIOUS_PASS,
    PREVIOUS_STAGE,
    CostsResult,
    ExplorerProtocol,
    KernelHeatResult,
    LayerPlacesResult,
    ListBundlesResult,
    ListPassesResult,
    NumericsResult,
    OriginsResult,
    converter_factory,
)
from tvm_explorer.lsp.shared import ENCODINGS, OffLoop, Session
from tvm_explorer.navigation import irsymbols
from tvm_explorer.navigation.background import REQUESTS
from tvm_explorer.version import __version__

logger = logging.getLogger(__name__)
SLOW_S = 0.02  # requests slower than this (the p99 goal) are logged (debug log) with where the time went


class ExplorerServer(LanguageServer):
    """pygls server reporting failures of notification handlers to the log only (a request
    failing is answered with an error by pygls; our handlers answer empty instead)."""

    def report_server_error(self, error, source):
        """Log instead of popping up an "Error in server" message."""
        logger.error("server error (%s): %s", getattr(source, "__name__", source), error)

    def start_io(self, stdin=None, stdout=None) -> int:
        """Serve over stdin/stdout with the bounded reader of ``transport.py``; returns the
        exit status (0 after shutdown + exit or the end of input, 1 for exit without shutdown)."""
        return transport.serve_stdio(self, stdin, stdout)

    def start_tcp(self, host: str, port: int) -> None:
        """pygls' entry point: ``serve_tcp`` (the exit status is left out, as pygls' is)."""
        self.serve_tcp(host, port)

    def serve_tcp(self, host: str, port: int) -> int:
        """Serve one client at a time on a TCP port (same reader); returns the exit status."""
        return transport.serve_tcp(self, host, port)


def create_server(poll_interval: float = 1.0) -> ExplorerServer:
    """A server with every feature registered; ``poll_interval`` seconds between checks of
    the bundles on disk (0 disables polling)."""
    server = ExplorerServer(
        "tvm-explorer",
        __version__,
        protocol_cls=ExplorerProtocol,
        converter_factory=converter_factory,
        text_document_sync_kind=types.TextDocumentSyncKind.Incremental,
    )
    session = Session()
    log_bridge = install_log_bridge(server)
    watcher = BundleWatcher(server, session, poll_interval)
    documents = DocumentTracker(server, session, watcher)
    definition = Definition(session)
    previous = PreviousStage(session)
    hover = Hover(session)
    references = References(session)
    symbols = DocumentSymbols(session)

    def current(view):
        return lambda: session.registry.is_current(view)

    # Before a bundle is installed (nearly every request needs it): its layer map.
    def layer_map(view):
        return view.layer_map

    watcher.before_install.append(layer_map)
    # Then in the background, once the requests that waited for the load are answered: the
    # outline of its generated code, where users start (a CUDA file's takes ~30 ms); every
    # document's lines and outline of functions (~0.2 s for a 60 MiB bundle), the editor's
    # outlines, the structure of every function.
    watcher.after_load.append(lambda view: irsymbols.outline_code(view, current(view)))
    watcher.after_load.append(session.warm_lines)
    watcher.after_load.append(lambda view: irsymbols.warm_outlines(view, current(view)))
    watcher.after_load.append(symbols.warm)
    watcher.after_load.append(lambda view: irsymbols.warm_structures(view, current(view)))
    watcher.after_load.append(lambda view: give_back())  # what the warm-ups made and dropped
    highlights = DocumentHighlights(session)
    lenses = CodeLenses(session)
    links = DocumentLinks(session)
    requests = ExplorerRequests(session)
    steps = PassSteps(session)
    numerics = Numerics(server, session)
    watcher.on_installed.append(numerics.publish)
    cost_requests = CostRequests(session)
    reproducers = Reproducers(session)
    comparisons = BundleComparisons(session)

    @server.feature(types.INITIALIZE)
    def initialize(ls: ExplorerServer, params: types.InitializeParams):
        watcher.configure(params)
        caps = params.capabilities.text_document
        session.link_tooltips = bool(caps and caps.document_link and caps.document_link.tooltip_support)

    @server.feature(types.INITIALIZED)
    async def initialized(ls: ExplorerServer, params: types.InitializedParams):
        session.encoding = ENCODINGS.get(str(ls.workspace.position_encoding), "utf-16")
        log_bridge.attach(asyncio.get_running_loop())
        await watcher.start()

    @server.feature(types.SHUTDOWN)
    def shutdown(ls: ExplorerServer, params):
        watcher.stop()

    @server.feature(types.WORKSPACE_DID_CHANGE_WORKSPACE_FOLDERS)
    def folders_changed(ls: ExplorerServer, params: types.DidChangeWorkspaceFoldersParams):
        watcher.folders_changed(params.event)

    @server.feature(types.WORKSPACE_DID_CHANGE_WATCHED_FILES)
    def files_changed(ls: ExplorerServer, params: types.DidChangeWatchedFilesParams):
        watcher.files_changed()

    @server.feature(types.TEXT_DOCUMENT_DID_OPEN)
    def did_open(ls: ExplorerServer, params: types.DidOpenTextDocumentParams):
        documents.opened(params)

    @server.feature(types.TEXT_DOCUMENT_DID_CHANGE)
    def did_change(ls: ExplorerServer, params: types.DidChangeTextDocumentParams):
        documents.changed(params)

    @server.feature(types.TEXT_DOCUMENT_DID_CLOSE)
    def did_close(ls: ExplorerServer, params: types.DidCloseTextDocumentParams):
        documents.closed(params)

    quiet_trim = QuietTrim()

    def answer(method: str, handler, empty):
        """Register ``handler`` for ``method``: wait for the bundle to be loaded, then look up.
        A failure answers ``empty`` (and is logged), never an error response: a bug at one
        position must not break the editor's navigation."""

        async def respond(ls: ExplorerServer, params):
            document = getattr(params, "text_document", None)
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
            except Exception:
                logger.exception("%s failed", method)
                return empty

        def answer_now(params, t0: float, t1: float):
            try:
                return handler(params)
            except BundleChanged as err:
                # A document changed on disk since its bundle was loaded: nothing of the new
                # version is mixed into the old one's answer; the watcher reloads the bundle.
                logger.info("%s: %s", method, err)
                return empty
            except Exception:
                logger.exception("%s failed", method)
                return empty
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
        server.feature(method)(respond)

    answer(types.TEXT_DOCUMENT_DEFINITION, definition.definition, [])
    answer(types.TEXT_DOCUMENT_DECLARATION, previous.previous_stage, [])
    answer(PREVIOUS_STAGE, previous.previous_stage, [])
    answer(PREVIOUS_PASS, steps.previous_pass, [])
    answer(NEXT_PASS, steps.next_pass, [])
    answer(LAYER_PLACES, steps.layer_places, LayerPlacesResult([], []))
    answer(types.TEXT_DOCUMENT_HOVER, hover.hover, None)
    answer(types.TEXT_DOCUMENT_REFERENCES, references.references, [])
    answer(types.TEXT_DOCUMENT_DOCUMENT_HIGHLIGHT, highlights.highlights, [])
    answer(types.TEXT_DOCUMENT_DOCUMENT_SYMBOL, symbols.symbols, [])
    answer(types.WORKSPACE_SYMBOL, symbols.workspace_symbols, [])
    answer(types.TEXT_DOCUMENT_CODE_LENS, lenses.code_lenses, [])
    answer(types.TEXT_DOCUMENT_DOCUMENT_LINK, links.links, [])
    answer(LIST_BUNDLES, requests.list_bundles, ListBundlesResult([]))
    answer(LIST_PASSES, requests.list_passes, ListPassesResult([]))
    answer(ORIGINS, requests.origins, OriginsResult([]))
    model_doc = ModelDocument()

    @server.feature(MODEL_DOCUMENT)
    async def model_document(ls: ExplorerServer, params):
        return await model_doc.model_document(params)

    answer(NUMERICS, numerics.numerics, NumericsResult())
    answer(COSTS, cost_requests.costs, CostsResult(False, None, "none", None, []))
    answer(KERNEL_HEAT, cost_requests.kernel_heat, KernelHeatResult([]))
    answer(COMPARE_BUNDLES, comparisons.compare_bundles, {"error": "comparison failed"})
    answer(COMPARE_LAYER_CODE, comparisons.layer_code, {"error": "comparison failed"})

    @server.feature(
        types.TEXT_DOCUMENT_CODE_ACTION,
        types.CodeActionOptions(code_action_kinds=[types.CodeActionKind.RefactorExtract]),
    )
    async def code_action(ls: ExplorerServer, params: types.CodeActionParams):
        await watcher.wait_for(params.text_document.uri)
        try:
            return reproducers.code_actions(params)
        except Exception:
            logger.exception("codeAction failed")
            return []

    @server.command(EXTRACT_REPRODUCER_COMMAND)
    async def extract_reproducer(ls: ExplorerServer, spec=None):
        return await reproducers.execute(ls, spec)

    return server

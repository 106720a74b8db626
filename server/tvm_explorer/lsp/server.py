"""The language server: the one place that registers handlers and hands them to features."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import Any

from lsprotocol import types
from pygls.exceptions import JsonRpcException, JsonRpcInternalError
from pygls.lsp.server import LanguageServer

from tvm_explorer.lsp import transport
from tvm_explorer.lsp.answering import Answering
from tvm_explorer.lsp.features.bundles import BundleWatcher
from tvm_explorer.lsp.features.codelens import CodeLenses
from tvm_explorer.lsp.features.compare import BundleComparisons
from tvm_explorer.lsp.features.costs import CostRequests
from tvm_explorer.lsp.features.custom import ExplorerRequests
from tvm_explorer.lsp.features.declaration import PreviousStage
from tvm_explorer.lsp.features.definition import Definition
from tvm_explorer.lsp.features.documents import DocumentTracker
from tvm_explorer.lsp.features.graph import ModelGraph
from tvm_explorer.lsp.features.highlights import DocumentHighlights
from tvm_explorer.lsp.features.history import LayerHistory
from tvm_explorer.lsp.features.hover import Hover
from tvm_explorer.lsp.features.links import DocumentLinks
from tvm_explorer.lsp.features.memory import MemoryTimeline
from tvm_explorer.lsp.features.model_document import ModelDocument, model_kinds
from tvm_explorer.lsp.features.numerics import Numerics
from tvm_explorer.lsp.features.pass_diff import PassDiffAlignment
from tvm_explorer.lsp.features.passes import PassSteps
from tvm_explorer.lsp.features.references import References
from tvm_explorer.lsp.features.reproducers import Reproducers
from tvm_explorer.lsp.features.semantic_tokens import OPTIONS as SEMANTIC_TOKENS_OPTIONS
from tvm_explorer.lsp.features.semantic_tokens import SemanticTokens
from tvm_explorer.lsp.features.stage_sync import StageSync
from tvm_explorer.lsp.features.symbols import DocumentSymbols
from tvm_explorer.lsp.heap import give_back
from tvm_explorer.lsp.logbridge import install as install_log_bridge
from tvm_explorer.lsp.protocol import (
    COMPARE_BUNDLES,
    COMPARE_LAYER_CODE,
    COSTS,
    EXTRACT_REPRODUCER_COMMAND,
    KERNEL_HEAT,
    KERNEL_START,
    LAYER_HISTORY,
    LAYER_PLACES,
    LIST_BUNDLES,
    LIST_PASSES,
    MEMORY_TIMELINE,
    MODEL_DOCUMENT,
    MODEL_GRAPH,
    MODEL_KINDS,
    NEXT_PASS,
    NUMERICS,
    ORIGINS,
    PASS_DIFF_ALIGNMENT,
    PREVIOUS_PASS,
    PREVIOUS_STAGE,
    STAGE_DOCUMENTS,
    STAGE_RANGES,
    CostsResult,
    ExplorerProtocol,
    KernelHeatResult,
    LayerHistoryResult,
    LayerPlacesResult,
    ListBundlesResult,
    ListPassesResult,
    NumericsResult,
    OriginsResult,
    RequestFailed,
    StageDocumentsResult,
    StageRangesResult,
    converter_factory,
)
from tvm_explorer.lsp.shared import ENCODINGS, Session
from tvm_explorer.navigation import irsymbols
from tvm_explorer.version import __version__

logger = logging.getLogger(__name__)


class ExplorerServer(LanguageServer):
    """pygls server reporting failures of handlers to the log only (a request failing is
    answered with an error by pygls, whose message the extension shows where it asked by a
    command; navigation handlers answer empty instead)."""

    def report_server_error(self, error, source):
        """Log instead of popping up an "Error in server" message (a request answered with an
        error the feature chose, saying why, is no server error: logged as information)."""
        if isinstance(error, JsonRpcException) and not isinstance(error, JsonRpcInternalError):
            logger.info("%s: %s", getattr(source, "__name__", source), error)
            return
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
    symbols = DocumentSymbols(session)
    _warm_up_loaded_bundles(watcher, session, symbols)
    numerics = Numerics(server, session)
    watcher.on_installed.append(numerics.publish)
    _register_lifecycle(server, session, watcher, log_bridge)
    _register_answers(server, session, watcher, symbols, numerics)
    _register_reproducers(server, watcher, Reproducers(session))
    _register_colors(server, SemanticTokens(session))
    return server


def _warm_up_loaded_bundles(watcher: BundleWatcher, session: Session, symbols: DocumentSymbols) -> None:
    """Before a bundle is installed (nearly every request needs it): its layer map. Then in the
    background, once the requests that waited for the load are answered: the outline of its
    generated code, where users start (a CUDA file's takes ~30 ms); every document's lines and
    outline of functions (~0.2 s for a 60 MiB bundle), the editor's outlines, the structure of
    every function."""

    def current(view):
        return lambda: session.registry.is_current(view)

    def layer_map(view):
        return view.layer_map

    watcher.before_install.append(layer_map)
    watcher.after_load.append(lambda view: irsymbols.outline_code(view, current(view)))
    watcher.after_load.append(session.warm_lines)
    watcher.after_load.append(lambda view: irsymbols.warm_outlines(view, current(view)))
    watcher.after_load.append(symbols.warm)
    watcher.after_load.append(lambda view: irsymbols.warm_structures(view, current(view)))
    watcher.after_load.append(lambda view: give_back())  # what the warm-ups made and dropped


def _register_lifecycle(server: ExplorerServer, session: Session, watcher: BundleWatcher, log_bridge) -> None:
    """Initialize, shutdown, workspace folders and watched files, and the open documents."""
    documents = DocumentTracker(server, session, watcher)

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


def _register_answers(
    server: ExplorerServer, session: Session, watcher: BundleWatcher, symbols: DocumentSymbols, numerics: Numerics
) -> None:
    """Every request answered from loaded bundles, each with the result it gives when it fails
    (``answering.py``), and the model document of any model file."""
    definition, previous, steps = Definition(session), PreviousStage(session), PassSteps(session)
    requests, costs, comparisons = ExplorerRequests(session), CostRequests(session), BundleComparisons(session)
    stage_sync = StageSync(session)
    answers: list[tuple[str, Callable[[Any], Any], Any]] = [
        (types.TEXT_DOCUMENT_DEFINITION, definition.definition, []),
        (types.TEXT_DOCUMENT_DECLARATION, previous.previous_stage, []),
        (PREVIOUS_STAGE, previous.previous_stage, []),
        (PREVIOUS_PASS, steps.previous_pass, []),
        (NEXT_PASS, steps.next_pass, []),
        (LAYER_PLACES, steps.layer_places, LayerPlacesResult([], [])),
        (types.TEXT_DOCUMENT_HOVER, Hover(session).hover, None),
        (types.TEXT_DOCUMENT_REFERENCES, References(session).references, []),
        (types.TEXT_DOCUMENT_DOCUMENT_HIGHLIGHT, DocumentHighlights(session).highlights, []),
        (types.TEXT_DOCUMENT_DOCUMENT_SYMBOL, symbols.symbols, []),
        (types.WORKSPACE_SYMBOL, symbols.workspace_symbols, []),
        (types.TEXT_DOCUMENT_CODE_LENS, CodeLenses(session).code_lenses, []),
        (types.TEXT_DOCUMENT_DOCUMENT_LINK, DocumentLinks(session).links, []),
        (LIST_BUNDLES, requests.list_bundles, ListBundlesResult([])),
        (LIST_PASSES, requests.list_passes, ListPassesResult([])),
        (ORIGINS, requests.origins, OriginsResult([])),
        (NUMERICS, numerics.numerics, NumericsResult()),
        (COSTS, costs.costs, CostsResult(False, None, "none", None, [])),
        (KERNEL_HEAT, costs.kernel_heat, KernelHeatResult([])),
        (KERNEL_START, costs.kernel_start, None),
        (COMPARE_BUNDLES, comparisons.compare_bundles, RequestFailed("comparison failed (server log)")),
        (COMPARE_LAYER_CODE, comparisons.layer_code, RequestFailed("comparison failed (server log)")),
        (MODEL_GRAPH, ModelGraph(session).model_graph, RequestFailed("the model graph could not be made (server log)")),
        (STAGE_DOCUMENTS, stage_sync.stage_documents, StageDocumentsResult([])),
        (STAGE_RANGES, stage_sync.stage_ranges, StageRangesResult([], [])),
        (LAYER_HISTORY, LayerHistory(session).layer_history, LayerHistoryResult([], [])),
        (
            PASS_DIFF_ALIGNMENT,
            PassDiffAlignment(session).alignment,
            RequestFailed("the pass diff could not be aligned (server log)"),
        ),
        (
            MEMORY_TIMELINE,
            MemoryTimeline(session).memory_timeline,
            RequestFailed("the memory timeline could not be made (server log)"),
        ),
    ]
    answering = Answering(server, watcher)
    for method, handler, empty in answers:
        answering.register(method, handler, empty)
    model_doc = ModelDocument()

    @server.feature(MODEL_DOCUMENT)
    async def model_document(ls: ExplorerServer, params):
        return await model_doc.model_document(params)

    @server.feature(MODEL_KINDS)
    async def kinds(ls: ExplorerServer, params):
        return await asyncio.to_thread(model_kinds)  # the first time imports the frontends' tables


def _register_colors(server: ExplorerServer, tokens: SemanticTokens) -> None:
    """The colors of generated code: lexed from the editor's text, no bundle needed."""

    @server.feature(types.TEXT_DOCUMENT_SEMANTIC_TOKENS_RANGE, SEMANTIC_TOKENS_OPTIONS)
    def semantic_tokens_range(ls: ExplorerServer, params: types.SemanticTokensRangeParams):
        try:
            return tokens.range(params)
        except Exception:
            logger.exception("semanticTokens/range failed")
            return None


def _register_reproducers(server: ExplorerServer, watcher: BundleWatcher, reproducers: Reproducers) -> None:
    """The "Extract Reproducer" code action and the command that runs it."""

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

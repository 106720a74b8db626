"""The language server: the one place that registers handlers and hands them to features."""

from __future__ import annotations

import logging

from lsprotocol import types
from pygls.lsp.server import LanguageServer

from .. import __version__
from .features.bundles import BundleWatcher
from .features.codelens import CodeLenses
from .features.custom import ExplorerRequests
from .features.declaration import PreviousStage
from .features.definition import Definition
from .features.documents import DocumentTracker
from .features.hover import Hover
from .features.links import DocumentLinks
from .features.references import References
from .features.symbols import DocumentSymbols
from .protocol import (
    LIST_BUNDLES,
    LIST_PASSES,
    ORIGINS,
    PREVIOUS_STAGE,
    ExplorerProtocol,
    OriginsResult,
    converter_factory,
)
from .session import ENCODINGS, Session

logger = logging.getLogger(__name__)


class ExplorerServer(LanguageServer):
    """pygls server reporting failures of notification handlers to the log only (a request
    failing is answered with an error by pygls; our handlers answer empty instead)."""

    def report_server_error(self, error, source):
        """Log instead of popping up an "Error in server" message."""
        logger.error("server error (%s): %s", getattr(source, "__name__", source), error)


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
    watcher = BundleWatcher(server, session, poll_interval)
    documents = DocumentTracker(server, session, watcher)
    definition = Definition(session)
    previous = PreviousStage(session)
    hover = Hover(session)
    references = References(session)
    symbols = DocumentSymbols(session)
    lenses = CodeLenses(session)
    links = DocumentLinks(session)
    requests = ExplorerRequests(session)

    @server.feature(types.INITIALIZE)
    def initialize(ls: ExplorerServer, params: types.InitializeParams):
        watcher.configure(params)

    @server.feature(types.INITIALIZED)
    async def initialized(ls: ExplorerServer, params: types.InitializedParams):
        session.encoding = ENCODINGS.get(str(ls.workspace.position_encoding), "utf-16")
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

    @server.feature(types.TEXT_DOCUMENT_DEFINITION)
    def goto_definition(ls: ExplorerServer, params: types.DefinitionParams):
        return _safe(definition.definition, params, [])

    @server.feature(types.TEXT_DOCUMENT_DECLARATION)
    def goto_declaration(ls: ExplorerServer, params: types.DeclarationParams):
        return _safe(previous.previous_stage, params, [])

    @server.feature(PREVIOUS_STAGE)
    def previous_stage(ls: ExplorerServer, params: types.TextDocumentPositionParams):
        return _safe(previous.previous_stage, params, [])

    @server.feature(types.TEXT_DOCUMENT_HOVER)
    def on_hover(ls: ExplorerServer, params: types.HoverParams):
        return _safe(hover.hover, params, None)

    @server.feature(types.TEXT_DOCUMENT_REFERENCES)
    def find_references(ls: ExplorerServer, params: types.ReferenceParams):
        return _safe(references.references, params, [])

    @server.feature(types.TEXT_DOCUMENT_DOCUMENT_SYMBOL)
    def document_symbols(ls: ExplorerServer, params: types.DocumentSymbolParams):
        return _safe(symbols.symbols, params, [])

    @server.feature(types.TEXT_DOCUMENT_CODE_LENS)
    def code_lens(ls: ExplorerServer, params: types.CodeLensParams):
        return _safe(lenses.code_lenses, params, [])

    @server.feature(types.TEXT_DOCUMENT_DOCUMENT_LINK)
    def document_link(ls: ExplorerServer, params: types.DocumentLinkParams):
        return _safe(links.links, params, [])

    @server.feature(LIST_BUNDLES)
    def list_bundles(ls: ExplorerServer, params):
        return requests.list_bundles(params)

    @server.feature(LIST_PASSES)
    def list_passes(ls: ExplorerServer, params):
        return requests.list_passes(params)

    @server.feature(ORIGINS)
    def origins(ls: ExplorerServer, params):
        return _safe(requests.origins, params, OriginsResult([]))

    return server


def _safe(handler, params, empty):
    """Run a feature; an unexpected failure answers empty (and is logged), never an error
    response: a bug for one position must not break the editor's navigation."""
    try:
        return handler(params)
    except Exception:
        logger.exception("%s failed", getattr(handler, "__qualname__", handler))
        return empty

"""What the tests on real bundles (the ``real_workspace`` fixture) share: a client started on
that workspace, its bundles as fixtures, and positions and landings read from bundle text."""

from __future__ import annotations

import pytest
import pytest_lsp
from lsprotocol import types
from pytest_lsp import LanguageClient

from tvm_explorer.bundle.reader import Bundle

from .conftest import SERVER, start_session, uri


def real_client():
    """A module-scoped ``client`` fixture: the real server on the real-bundle workspace."""

    @pytest_lsp.fixture(config=SERVER, scope="module")
    async def client(lsp_client: LanguageClient, real_workspace):
        await start_session(lsp_client, real_workspace["folder"], expect=len(real_workspace["bundles"]))
        yield
        await lsp_client.shutdown_session()

    return client


def real_bundle(name: str):
    """A module-scoped fixture: the real workspace's bundle ``name`` (e.g. ``small_cnn_fp32``)."""

    @pytest.fixture(scope="module")
    def bundle(real_workspace):
        return Bundle(real_workspace["bundles"][name])

    return bundle


def td(bundle: Bundle, path: str) -> types.TextDocumentIdentifier:
    """The identifier of the bundle's document ``path``."""
    return types.TextDocumentIdentifier(uri(bundle.root / path))


def pos(text: str, offset: int) -> types.Position:
    """LSP position (UTF-16 columns) of ``offset`` in ``text``."""
    line = text.count("\n", 0, offset)
    col = offset - (text.rfind("\n", 0, offset) + 1)
    return types.Position(line, len(text[offset - col : offset].encode("utf-16-le")) // 2)


def landing(bundle: Bundle, loc: types.Location) -> tuple[str, str, str]:
    """(document, text of the range, whole line at its start)."""
    rel = loc.uri[len(uri(bundle.root)) + 1 :]
    text = bundle.text(rel)
    lines = text.split("\n")
    start = sum(len(x) + 1 for x in lines[: loc.range.start.line]) + loc.range.start.character
    end = sum(len(x) + 1 for x in lines[: loc.range.end.line]) + loc.range.end.character
    return rel, text[start:end], lines[loc.range.start.line]

"""Requests sent while many bundles are still loading are all answered: a request waiting for
its bundle's load must not hold back the background warm-ups of the bundles loaded before it
(they pause while requests are answered), or the warm-ups would keep the threads the load
needs and the request would wait for ever (seen in code-server: hovers never answered after a
restart on a workspace of several bundles)."""

from __future__ import annotations

import asyncio
import shutil

import pytest
import pytest_lsp
from lsprotocol import types
from pytest_lsp import LanguageClient

from .conftest import SERVER, uri

COPIES = 10  # two warm-ups per loaded bundle: more than the default thread pool holds


@pytest.fixture(scope="module")
def many(real_workspace, tmp_path_factory):
    folder = tmp_path_factory.mktemp("many-bundles")
    source = real_workspace["bundles"]["small_cnn_fp32"]
    for i in range(COPIES):
        shutil.copytree(source, folder / f"copy{i:02d}.bundle")
    return folder


@pytest_lsp.fixture(config=SERVER, scope="module")
async def client(lsp_client: LanguageClient, many):
    await lsp_client.initialize_session(
        types.InitializeParams(
            capabilities=types.ClientCapabilities(
                text_document=types.TextDocumentClientCapabilities(
                    hover=types.HoverClientCapabilities(content_format=[types.MarkupKind.Markdown])
                )
            ),
            workspace_folders=[types.WorkspaceFolder(uri=uri(many), name=many.name)],
            initialization_options={"pollInterval": 0.2},
        )
    )
    yield
    await lsp_client.shutdown_session()


async def test_hovers_sent_before_the_bundles_load_are_all_answered(client: LanguageClient, many):
    text = (many / "copy00.bundle" / "code" / "module.c").read_text()
    line = next(i for i, l in enumerate(text.split("\n")) if "conv2d_nhwc" in l and "=" in l)
    column = len(text.split("\n")[line]) - len(text.split("\n")[line].lstrip()) + 1

    async def hover(i: int):
        doc = many / f"copy{i:02d}.bundle" / "code" / "module.c"
        return await client.text_document_hover_async(
            types.HoverParams(types.TextDocumentIdentifier(uri(doc)), types.Position(line, column))
        )

    answers = await asyncio.wait_for(asyncio.gather(*(hover(i) for i in reversed(range(COPIES)))), 90)
    for i, got in zip(reversed(range(COPIES)), answers):
        assert got is not None and "CONV_2D" in got.contents.value.replace("\\", ""), (i, got)

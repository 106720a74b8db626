"""Shared fixtures of the language-server tests: workspaces, and a client talking to the real
server process (``python -m tvm_explorer serve``) over stdio."""

from __future__ import annotations

import asyncio
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
from lsprotocol import types
from pygls.protocol.json_rpc import JsonRPCNotification, JsonRPCRequestMessage
from pygls.uris import from_fs_path
from pytest_lsp import ClientServerConfig, LanguageClient

SERVER = ClientServerConfig(server_command=[sys.executable, "-m", "tvm_explorer", "serve"])


def uri(path: Path) -> str:
    """``file:`` URI of a path."""
    return from_fs_path(str(path))


async def start_session(client: LanguageClient, folder: Path, expect: int = 1, **options):
    """Initialize the server on workspace ``folder`` and wait until ``expect`` bundles are
    loaded; returns the server's InitializeResult."""
    result = await client.initialize_session(
        types.InitializeParams(
            capabilities=types.ClientCapabilities(
                window=types.WindowClientCapabilities(work_done_progress=True),
                text_document=types.TextDocumentClientCapabilities(
                    hover=types.HoverClientCapabilities(content_format=[types.MarkupKind.Markdown]),
                    document_symbol=types.DocumentSymbolClientCapabilities(hierarchical_document_symbol_support=True),
                ),
            ),
            workspace_folders=[types.WorkspaceFolder(uri=uri(folder), name=folder.name)],
            initialization_options={"pollInterval": 0.2, **options},
        )
    )
    await wait_for_bundles(client, expect)
    return result


async def wait_for_bundles(client: LanguageClient, count: int, timeout: float = 60.0, predicate=None) -> list:
    """Poll ``tvmExplorer/listBundles`` until ``count`` bundles are loaded (and
    ``predicate(bundles)`` holds)."""
    deadline = time.monotonic() + timeout
    while True:
        result = await client.protocol.send_request_async("tvmExplorer/listBundles", {})
        bundles = result.bundles
        if len(bundles) == count and (predicate is None or predicate(bundles)):
            return bundles
        if time.monotonic() > deadline:
            raise AssertionError(f"expected {count} bundles, server has {bundles}")
        await asyncio.sleep(0.1)


def workspace_client(expect: int = 1):
    """A module-scoped ``client`` fixture: the real server on the folder the module's own
    ``workspace`` fixture returns (``expect`` bundles in it)."""
    import pytest_lsp

    @pytest_lsp.fixture(config=SERVER, scope="module")
    async def client(lsp_client: LanguageClient, workspace):
        await start_session(lsp_client, workspace, expect=expect)
        yield
        await lsp_client.shutdown_session()

    return client


_IDS = iter(range(1, 10**9))


def send_raw(client: LanguageClient, method: str, params, msg_id: str | None = None):
    """Send a request with raw JSON params (so that invalid ones go out as they are); the
    answer is parsed like any other."""
    from concurrent.futures import Future

    proto = client.protocol
    msg_id = msg_id or f"raw-{next(_IDS)}"
    future: Future = Future()
    proto._request_futures[msg_id] = future
    proto._result_types[msg_id] = proto.get_result_type(method)
    proto._send_data(JsonRPCRequestMessage(id=msg_id, method=method, jsonrpc="2.0", params=params))
    return asyncio.wrap_future(future)


def cancel(client: LanguageClient, msg_id: str) -> None:
    client.protocol._send_data(JsonRPCNotification(method="$/cancelRequest", jsonrpc="2.0", params={"id": msg_id}))


def position_of(text: str, needle: str, occurrence: int = 0, delta: int = 0) -> types.Position:
    """LSP position (UTF-16) of the ``occurrence``-th ``needle`` in ``text``, plus ``delta``
    characters."""
    offset = -1
    for _ in range(occurrence + 1):
        offset = text.index(needle, offset + 1)
    offset += delta
    line = text.count("\n", 0, offset)
    col_text = text[text.rfind("\n", 0, offset) + 1 : offset]
    return types.Position(line, len(col_text.encode("utf-16-le")) // 2)


async def hover_value(client: LanguageClient, bundle, path: str, needle: str, delta: int = 6) -> str:
    """The hover's Markdown at ``delta`` characters into ``needle`` in the bundle document ``path``."""
    doc = types.TextDocumentIdentifier(uri(bundle.root / path))
    hover = await client.text_document_hover_async(
        types.HoverParams(doc, position_of(bundle.text(path), needle, delta=delta))
    )
    return hover.contents.value


async def planted_hovers(client: LanguageClient, bundle, path: str, diverging: str, matching: str) -> str:
    """Hovers the layer at ``diverging`` (the planted 0.5 error, the first divergence) and the
    one at ``matching`` in the model document ``path``; returns the diverging layer's hover."""
    value = await hover_value(client, bundle, path, diverging)
    assert "**Numerics**" in value and "max abs 0.5" in value and "**first divergence**" in value
    matches = await hover_value(client, bundle, path, matching)
    assert "matches" in matches and "first divergence" not in matches
    return value


@pytest.fixture(scope="session")
def fake_workspace(tmp_path_factory) -> Path:
    """A workspace holding the hand-written bundle at ``bundles/tiny``."""
    from .fake_bundle import write_fake_bundle

    ws = tmp_path_factory.mktemp("fake-ws")
    write_fake_bundle(ws / "bundles" / "tiny")
    return ws


REAL_MODELS = ("small_cnn_fp32", "small_cnn_int8")
MODELS_DIR = Path(__file__).resolve().parents[1] / "models"


def compile_bundle(model: Path, out: Path, target: str = "c") -> Path:
    """Run the real ``tvm-explorer compile`` (``TVM_EXPLORER_COMPILE`` may name another
    interpreter/command prefix, for trying a capture that is not merged yet)."""
    prefix = os.environ.get("TVM_EXPLORER_COMPILE", f"{sys.executable} -m tvm_explorer").split()
    cmd = [*prefix, "compile", str(model), "-o", str(out), "--target", target]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=1800)
    if proc.returncode != 0 and "invalid choice: 'compile'" in proc.stderr:
        pytest.skip("`tvm-explorer compile` is not available on this branch yet")
    assert proc.returncode == 0, f"{' '.join(cmd)} failed:\n{proc.stdout}\n{proc.stderr}"
    return out.resolve()


def session_bundle(bundles, model: Path, out: Path, target: str = "c") -> Path:
    """``model`` compiled for ``target`` at ``out``: a copy of the session's own compile (tests/
    conftest.py's ``bundles``, the same CLI call), or compiled here by ``TVM_EXPLORER_COMPILE``."""
    if os.environ.get("TVM_EXPLORER_COMPILE"):
        return compile_bundle(model, out, target)
    shutil.copytree(bundles.get(model, target), out)
    return out.resolve()


@pytest.fixture(scope="session")
def real_workspace(tmp_path_factory, bundles) -> dict:
    """A workspace with real bundles compiled once per test session (target c, and cuda)."""
    folder = tmp_path_factory.mktemp("real-ws")
    (folder / "bundles").mkdir()
    real = {
        name: session_bundle(bundles, MODELS_DIR / f"{name}.tflite", folder / "bundles" / name) for name in REAL_MODELS
    }
    real["small_cnn_fp32_cuda"] = session_bundle(
        bundles, MODELS_DIR / "small_cnn_fp32.tflite", folder / "bundles" / "small_cnn_fp32_cuda", "cuda"
    )
    return {"folder": folder, "bundles": real}

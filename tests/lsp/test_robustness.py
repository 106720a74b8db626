"""Damaged bundles, edited documents, recompiles and documents outside any bundle: the
server reports, shifts or drops, and never answers wrong or crashes."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import time

import pytest
import pytest_lsp
from lsprotocol import types
from pytest_lsp import LanguageClient

from .conftest import SERVER, position_of, send_raw, start_session, uri, wait_for_bundles
from .fake_bundle import texts, write_fake_bundle

TEXTS = texts()
C = "code/module.c"


def _damage(ws):
    good = write_fake_bundle(ws / "good")
    bad_json = write_fake_bundle(ws / "bad_json")
    (bad_json / "index.json").write_text("{ not json", encoding="utf-8")
    schema = write_fake_bundle(ws / "schema")
    man = json.loads((schema / "manifest.json").read_text())
    man["schema_version"] = 99
    (schema / "manifest.json").write_text(json.dumps(man))
    escape = write_fake_bundle(ws / "escape")
    man = json.loads((escape / "manifest.json").read_text())
    man["documents"][1]["path"] = "../good/relax/000-import.relax"
    (escape / "manifest.json").write_text(json.dumps(man))
    link = write_fake_bundle(ws / "symlink")
    (link / C).unlink()
    os.symlink(good / C, link / C)
    stale = write_fake_bundle(ws / "stale")
    (stale / C).write_text((stale / C).read_text() + "// appended\n")
    # A FIFO in place of a document must not block the loader: that document is damaged.
    (stale / "relax" / "000-import.relax").unlink()
    os.mkfifo(stale / "relax" / "000-import.relax")
    # Hostile bundles: nothing outside the bundle may be read, nothing may block.
    secret = ws.parent / f"{ws.name}-secret.txt"
    secret.write_text("secret\n")
    old = time.time() - 3 * 86400
    os.utime(secret, (old, secret.stat().st_mtime))
    for name, damage in {
        "man_link": lambda b: ((b / "manifest.json").unlink(), os.symlink(secret, b / "manifest.json")),
        "index_link": lambda b: ((b / "index.json").unlink(), os.symlink(secret, b / "index.json")),
        "absolute": lambda b: _set_path(b, str(secret)),
        "dotdot": lambda b: _set_path(b, "../../" + secret.name),
        "man_fifo": lambda b: ((b / "manifest.json").unlink(), os.mkfifo(b / "manifest.json")),
        "nested": lambda b: (b / "manifest.json").write_text("[" * 100000 + "]" * 100000),
    }.items():
        damage(write_fake_bundle(ws / name))
    return good, stale


def _set_path(bundle, value):
    man = json.loads((bundle / "manifest.json").read_text())
    man["documents"][1]["path"] = value
    (bundle / "manifest.json").write_text(json.dumps(man))


@pytest.fixture(scope="module")
def workspace(tmp_path_factory):
    ws = tmp_path_factory.mktemp("robust-ws")
    good, stale = _damage(ws)
    outside = tmp_path_factory.mktemp("outside")
    write_fake_bundle(outside / "opened")
    return ws, good.resolve(), stale.resolve(), (outside / "opened").resolve()


@pytest_lsp.fixture(config=SERVER, scope="module")
async def client(lsp_client: LanguageClient, workspace):
    await start_session(lsp_client, workspace[0], expect=2)
    yield
    await lsp_client.shutdown_session()


def td(root, path):
    return types.TextDocumentIdentifier(uri(root / path))


async def define(client, root, path, pos):
    return await client.text_document_definition_async(types.DefinitionParams(td(root, path), pos))


async def test_damaged_bundles_are_reported_not_loaded(client: LanguageClient, workspace):
    ws, good, stale, _ = workspace
    bundles = await wait_for_bundles(client, 2)
    assert sorted(b.root for b in bundles) == sorted([str(good), str(stale)])
    text = "\n".join(m.message for m in client.messages)
    for name in ("bad_json", "schema", "escape", "symlink"):
        assert f"/{name}" in text, (name, text)
    assert "schema version 99" in text
    assert "leaves the bundle" in text
    assert "stale" in text and "index does not match" in text
    for name, needle in (
        ("man_link", "leads outside the bundle"),
        ("index_link", "leads outside"),
        ("absolute", "is not a relative path"),
        ("dotdot", "leaves the bundle"),
        ("man_fifo", "not a regular file"),
        ("nested", "not readable JSON"),
    ):
        assert any(f"/{name}" in m and needle in m for m in text.split("\n")), (name, text)
    assert "relax/000-import.relax" in text and "not a regular file" in text
    secret = ws.parent / f"{ws.name}-secret.txt"
    assert secret.stat().st_atime < time.time() - 86400, "the server read a file outside the bundles"


async def test_stale_document_answers_empty_rest_of_bundle_works(client, workspace):
    _, _, stale, _ = workspace
    pos = position_of(TEXTS[C], "y_1[i] = max")
    assert await define(client, stale, C, pos) == []
    path = "tir/000-input.tir"
    found = await define(client, stale, path, position_of(TEXTS[path], "y[i] = T.max"))
    assert len(found) == 1


async def test_unknown_documents_and_garbage_uris_answer_empty(client, workspace):
    ws, good, _, _ = workspace
    (ws / "notes.txt").write_text("hello\n")
    for doc_uri in [
        uri(ws / "notes.txt"),
        "file:///does/not/exist.c",
        "untitled:Untitled-1",
        "not a uri",
        uri(good / "manifest.json"),
    ]:
        params = types.DefinitionParams(types.TextDocumentIdentifier(doc_uri), types.Position(0, 0))
        assert await client.text_document_definition_async(params) == []
        hover = types.HoverParams(types.TextDocumentIdentifier(doc_uri), types.Position(0, 0))
        assert await client.text_document_hover_async(hover) is None
        refs = types.ReferenceParams(
            text_document=types.TextDocumentIdentifier(doc_uri),
            position=types.Position(0, 0),
            context=types.ReferenceContext(include_declaration=True),
        )
        assert not await client.text_document_references_async(refs)
        sym = types.DocumentSymbolParams(types.TextDocumentIdentifier(doc_uri))
        assert not await client.text_document_document_symbol_async(sym)


async def test_requests_with_invalid_params_are_answered(client: LanguageClient, workspace):
    """pygls 2.1 drops a request it cannot read; the server answers it with InvalidParams
    (LSP: every request gets a response), and keeps working."""
    from pygls.exceptions import JsonRpcException

    _, good, _, _ = workspace
    doc = {"uri": uri(good / C)}
    for params in (
        {"textDocument": doc, "position": {"line": -1, "character": 0}},
        {"textDocument": doc, "position": {"line": 0, "character": "x"}},
        {"textDocument": doc},
        {"position": {"line": 0, "character": 0}},
        [1, 2],
    ):
        with pytest.raises(JsonRpcException) as err:
            await asyncio.wait_for(send_raw(client, types.TEXT_DOCUMENT_DEFINITION, params), 10)
        assert err.value.code == -32602, err.value
    pos = position_of(TEXTS[C], "y_1[i] = max")
    assert len(await define(client, good, C, pos)) == 1


async def test_edits_shift_ranges_or_drop_them(client, workspace):
    _, good, _, _ = workspace
    doc_uri = uri(good / C)
    text = TEXTS[C]
    client.text_document_did_open(types.DidOpenTextDocumentParams(types.TextDocumentItem(doc_uri, "c", 1, text)))
    line_of = position_of(text, "y_1[i] = max")
    before = await define(client, good, C, line_of)
    assert len(before) == 1
    # Insert two lines at the top: answers move two lines down.
    client.text_document_did_change(
        types.DidChangeTextDocumentParams(
            types.VersionedTextDocumentIdentifier(uri=doc_uri, version=2),
            [
                types.TextDocumentContentChangePartial(
                    range=types.Range(types.Position(0, 0), types.Position(0, 0)), text="// a\n// b\n"
                )
            ],
        )
    )
    moved = types.Position(line_of.line + 2, line_of.character)
    assert await define(client, good, C, moved) == before
    # The old line number now shows the loop header (two lines up before): both layers.
    assert len(await define(client, good, C, line_of)) == 2
    # Edit inside the store: its range is dropped, no answer from the stale index.
    edit_at = types.Position(moved.line, moved.character + 2)
    client.text_document_did_change(
        types.DidChangeTextDocumentParams(
            types.VersionedTextDocumentIdentifier(uri=doc_uri, version=3),
            [types.TextDocumentContentChangePartial(range=types.Range(edit_at, edit_at), text="Z")],
        )
    )
    assert await define(client, good, C, moved) == []

    # References landing in the edited document are shifted, or dropped when an edit may
    # have touched them (two edits count as one region from the first to the last).
    async def refs_in_c(opcode):
        refs = await client.text_document_references_async(
            types.ReferenceParams(
                text_document=td(good, "model.tflgraph"),
                position=position_of(TEXTS["model.tflgraph"], opcode),
                context=types.ReferenceContext(include_declaration=False),
            )
        )
        return [r.range.start.line for r in refs if r.uri == doc_uri]

    assert await refs_in_c("CONV_2D") == []
    assert await refs_in_c("ADD") == [position_of(text, "y_1[i] = (x_1").line + 2]
    # Undo everything: back to the bundle text, back to the original answers.
    client.text_document_did_change(
        types.DidChangeTextDocumentParams(
            types.VersionedTextDocumentIdentifier(uri=doc_uri, version=4),
            [types.TextDocumentContentChangeWholeDocument(text=text)],
        )
    )
    assert await define(client, good, C, line_of) == before
    client.text_document_did_close(types.DidCloseTextDocumentParams(types.TextDocumentIdentifier(doc_uri)))


async def test_opened_document_of_a_bundle_outside_the_workspace(client, workspace):
    *_, outside = workspace
    path = "tir/000-input.tir"
    doc_uri = uri(outside / path)
    client.text_document_did_open(
        types.DidOpenTextDocumentParams(types.TextDocumentItem(doc_uri, "tvm-tir", 1, TEXTS[path]))
    )
    found = await define(client, outside, path, position_of(TEXTS[path], "y[i] = x[i] + c"))
    assert [loc.uri for loc in found] == [uri(outside / "model.tflgraph")]


async def test_recompile_replaces_bundle_atomically(client: LanguageClient, workspace):
    ws, good, *_ = workspace
    path = "relax/000-import.relax"
    pos = position_of(TEXTS[path], "gv = R.add")
    assert len(await define(client, good, path, pos)) == 1
    # Recompile: the new bundle maps `gv` to layers 0 and 2; written aside, renamed in place.
    tmp = write_fake_bundle(ws / f".good.tmp-{os.getpid()}")
    index = json.loads((tmp / "index.json").read_text())
    index["origin_sets"].append([[0, False], [2, True]])
    for row in index["documents"][path]["ranges"]:
        if row[4] == "bind:main:gv":
            row[2] = len(index["origin_sets"]) - 1
    (tmp / "index.json").write_text(json.dumps(index))
    old = ws / ".good.old"
    os.rename(good, old)
    os.rename(tmp, good)
    shutil.rmtree(old)
    for _ in range(100):
        found = await define(client, good, path, pos)
        if len(found) == 2:
            break
        assert len(found) == 1  # the old answer until the new bundle is in: never a mix
        await asyncio.sleep(0.1)
    assert len(found) == 2
    # Removing a bundle removes it from the server.
    shutil.rmtree(good)
    await wait_for_bundles(client, 2, predicate=lambda bs: all(b.root != str(good) for b in bs))

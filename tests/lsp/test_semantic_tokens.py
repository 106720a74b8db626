"""Generated C and CUDA are colored by the server (``textDocument/semanticTokens/range``: the
lines on screen, lexed from the editor's text), not by a TextMate grammar tokenizing a whole
multi-MB file in the editor. Checked on real bundles (small_cnn for cuda and c) through a real
server: what the capability offers, the token of each kind of word in a kernel's first line,
inline and multi-line block comments (also after edits), UTF-16 columns, and no tokens for
documents that are not code. Hostile lines (a 100 000-digit hex literal and a letter, which the
old number pattern took minutes on) lex in linear time, a request is bounded, and it never holds
up another bundle's hover."""

from __future__ import annotations

import asyncio
import json
import re
import subprocess
import time

import pytest
import pytest_lsp
from lsprotocol import types
from pytest_lsp import LanguageClient

from tvm_explorer.bundle.reader import Bundle
from tvm_explorer.navigation.c_tokens import MAX_LINE_CHARS, line_tokens

from .conftest import MODELS_DIR, SERVER, session_bundle, start_session, uri

CU = "code/device.cu"
C = "code/module.c"


@pytest.fixture(scope="module")
def workspace(tmp_path_factory, bundles):
    folder = tmp_path_factory.mktemp("colors-ws")
    model = MODELS_DIR / "small_cnn_fp32.tflite"
    cuda = Bundle(session_bundle(bundles, model, folder / "cnn_cuda.bundle", "cuda"))
    c = Bundle(session_bundle(bundles, model, folder / "cnn_c.bundle", "c"))
    return folder, cuda, c


@pytest_lsp.fixture(config=SERVER, scope="module")
async def client(lsp_client: LanguageClient, workspace):
    result = await start_session(lsp_client, workspace[0], expect=2)
    lsp_client.init_result = result
    yield
    await lsp_client.shutdown_session()


def _open(client: LanguageClient, bundle: Bundle, path: str, version: int = 1) -> str:
    doc_uri = uri(bundle.root / path)
    client.text_document_did_open(
        types.DidOpenTextDocumentParams(types.TextDocumentItem(doc_uri, "tvm-generated-c", version, bundle.text(path)))
    )
    return doc_uri


async def _tokens(client: LanguageClient, doc_uri: str, first: int, last: int) -> list[tuple[int, int, int, str]]:
    """(line, column, length, type) of the tokens of lines first..last."""
    got = await client.text_document_semantic_tokens_range_async(
        types.SemanticTokensRangeParams(
            types.TextDocumentIdentifier(doc_uri), types.Range(types.Position(first, 0), types.Position(last, 0))
        )
    )
    legend = client.init_result.capabilities.semantic_tokens_provider.legend.token_types
    out, line, col = [], 0, 0
    data = got.data if got else []
    for i in range(0, len(data), 5):
        dl, dc, length, kind, _ = data[i : i + 5]
        line, col = line + dl, (col + dc if dl == 0 else dc)
        out.append((line, col, length, legend[kind]))
    return out


def _word_types(lines: list[str], tokens) -> dict[str, str]:
    return {lines[ln][c : c + n]: kind for ln, c, n, kind in tokens}


async def test_the_capability_is_ranges_of_generated_code(client):
    provider = client.init_result.capabilities.semantic_tokens_provider
    assert provider.range and not provider.full
    assert list(provider.legend.token_types) == ["comment", "string", "number", "keyword", "type", "function", "macro"]
    # Only for generated code (the client's types drop the selector: read the server's JSON).
    selectors = _raw_capabilities()["semanticTokensProvider"]["documentSelector"]
    assert {"language": "tvm-generated-c"} in selectors, selectors
    assert any("code/" in f.get("pattern", "") for f in selectors), selectors


def _raw_capabilities() -> dict:
    """The capabilities a fresh server process answers ``initialize`` with, as JSON."""
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"capabilities": {}}})
    message = f"Content-Length: {len(body)}\r\n\r\n{body}".encode()
    exit_ = json.dumps({"jsonrpc": "2.0", "method": "exit"})
    message += f"Content-Length: {len(exit_)}\r\n\r\n{exit_}".encode()
    out = subprocess.run(SERVER.server_command, input=message, capture_output=True, timeout=60).stdout
    header, _, rest = out.partition(b"\r\n\r\n")
    length = int(re.search(rb"Content-Length: (\d+)", header).group(1))
    return json.loads(rest[:length])["result"]["capabilities"]


async def test_a_cuda_kernel_line_is_colored_word_by_word(client, workspace):
    _, cuda, _ = workspace
    text = cuda.text(CU)
    lines = text.split("\n")
    doc_uri = _open(client, cuda, CU)
    kernel = next(i for i, line in enumerate(lines) if "__global__ void" in line)
    name = re.search(r"(\w+)\(", lines[kernel].split("__launch_bounds__")[-1].split(")", 1)[1]).group(1)
    types_of = _word_types(lines, await _tokens(client, doc_uri, kernel, kernel))
    assert types_of['"C"'] == "string"
    assert types_of["extern"] == types_of["__global__"] == types_of["__launch_bounds__"] == "keyword"
    assert types_of["void"] == "type"
    assert types_of[name] == "function", (name, types_of)
    assert any(kind == "number" for word, kind in types_of.items() if word.isdigit()), types_of
    # The header's directives and the included file.
    head = _word_types(lines, await _tokens(client, doc_uri, 0, 40))
    assert head["#include"] == "macro" and head["<cuda/std/cstdint>"] == "string", head


async def test_inline_comments_and_hex_floats_of_a_dequantize(client, workspace):
    # The form of TVM's CUDA for an int8 model's dequantize (mobilenet_v3_small_int8's device.cu).
    _, cuda, _ = workspace
    doc_uri = _open(client, cuda, CU, version=20)
    line = "  d[i] = (((float)(((int)x[i]) + 128)) * 0x1.dd398ap-5f/*5.825498e-02*/);"
    client.text_document_did_change(
        types.DidChangeTextDocumentParams(
            types.VersionedTextDocumentIdentifier(version=21, uri=doc_uri),
            [
                types.TextDocumentContentChangePartial(
                    types.Range(types.Position(0, 0), types.Position(0, 0)), line + "\n"
                )
            ],
        )
    )
    types_of = _word_types([line], await _tokens(client, doc_uri, 0, 0))
    assert types_of == {
        "float": "type",
        "int": "type",
        "128": "number",
        "0x1.dd398ap-5f": "number",
        "/*5.825498e-02*/": "comment",
    }, types_of


async def test_a_block_comment_typed_into_the_file_colors_the_lines_below(client, workspace):
    _, _, c = workspace
    lines = c.text(C).split("\n")
    doc_uri = _open(client, c, C)
    at = next(i for i, line in enumerate(lines) if line.startswith("TVM_DLL int32_t"))
    before = _word_types(lines, await _tokens(client, doc_uri, at, at))
    assert before["int32_t"] == "type"
    client.text_document_did_change(
        types.DidChangeTextDocumentParams(
            types.VersionedTextDocumentIdentifier(version=2, uri=doc_uri),
            [
                types.TextDocumentContentChangePartial(
                    types.Range(types.Position(at, 0), types.Position(at, 0)), "/* note\n"
                )
            ],
        )
    )
    inside = await _tokens(client, doc_uri, at + 1, at + 1)  # the old line, now in the comment
    assert inside == [(at + 1, 0, len(lines[at]), "comment")], inside
    client.text_document_did_change(
        types.DidChangeTextDocumentParams(
            types.VersionedTextDocumentIdentifier(version=3, uri=doc_uri),
            [types.TextDocumentContentChangePartial(types.Range(types.Position(at, 0), types.Position(at + 1, 0)), "")],
        )
    )
    again = _word_types(lines, await _tokens(client, doc_uri, at, at))
    assert again == before


async def test_columns_count_utf16_units(client, workspace):
    _, _, c = workspace
    doc_uri = _open(client, c, C, version=10)
    client.text_document_did_change(
        types.DidChangeTextDocumentParams(
            types.VersionedTextDocumentIdentifier(version=11, uri=doc_uri),
            [
                types.TextDocumentContentChangePartial(
                    types.Range(types.Position(0, 0), types.Position(0, 0)), 'char* s = "é𝄞"; int x;\n'
                )
            ],
        )
    )
    got = await _tokens(client, doc_uri, 0, 0)
    # "é𝄞" is 4 code points but 5 UTF-16 units; `int` then starts at unit 17, not 16.
    assert (0, 10, 5, "string") in got and (0, 17, 3, "type") in got, got


async def test_documents_that_are_not_code_get_none(client, workspace):
    _, _, c = workspace
    tir = next(d["path"] for d in c.manifest["documents"] if d["path"].endswith(".tir"))
    doc_uri = uri(c.root / tir)
    client.text_document_did_open(
        types.DidOpenTextDocumentParams(types.TextDocumentItem(doc_uri, "tvm-tir", 1, c.text(tir)))
    )
    assert await _tokens(client, doc_uri, 0, 50) == []


@pytest.mark.parametrize("line", ["0x" + "f" * 100_000 + "g", "1" * 100_000 + "e", "x = 0x1." + "a" * 100_000 + "pz;"])
def test_a_long_literal_and_a_letter_lexes_in_linear_time(line):
    # Minutes (cubic) before; milliseconds now. An order of magnitude only: no tight timing.
    started = time.monotonic()
    tokens, _ = line_tokens(0, line, False)
    assert time.monotonic() - started < 5
    assert not any(t.kind == 2 for t in tokens)  # not a C literal, so not colored as a number


async def test_a_hostile_code_file_answers_and_holds_up_no_other_bundle(client, workspace):
    # Any file under a bundle's code/ folder gets colored: 30 lines of 100 000 hex digits and
    # a letter, then a hover on the other bundle sent right behind the colors request.
    _, cuda, c = workspace
    line = "int x = 0x" + "f" * 100_000 + "g;"
    doc_uri = uri(cuda.root / "code" / "hostile.c")
    client.text_document_did_open(
        types.DidOpenTextDocumentParams(types.TextDocumentItem(doc_uri, "c", 1, "\n".join([line] * 30)))
    )
    colors = asyncio.ensure_future(_tokens(client, doc_uri, 0, 29))
    text = c.text(C)
    at = re.search(r"\n(\s*)\w+\[[^\n]*\] = ", text)
    position = types.Position(text.count("\n", 0, at.start() + 1), len(at.group(1)))
    hover = await asyncio.wait_for(
        client.text_document_hover_async(types.HoverParams(types.TextDocumentIdentifier(uri(c.root / C)), position)), 60
    )
    assert hover is not None and "Generated code (target `c`)" in hover.contents.value
    got = await asyncio.wait_for(colors, 60)
    assert got[0] == (0, 0, 3, "type"), got[:3]
    # A long line is colored up to the limit only.
    assert all(col + length <= MAX_LINE_CHARS for _, col, length, _ in got), got[-3:]

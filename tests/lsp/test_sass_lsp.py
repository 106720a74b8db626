"""SASS documents (``compile --sass``) through a real server: hover names the layer, go to
definition lands first on the exact CUDA line the instruction's line information names (then the
model layer), Go to Declaration (one IR level back) lands on that CUDA line too, and a layer's
references include its machine code."""

from __future__ import annotations

import re
import shutil

import pytest
import pytest_lsp
from lsprotocol import types
from pytest_lsp import LanguageClient

from tvm_explorer.bundle.reader import Bundle

from .conftest import MODELS_DIR, SERVER, start_session, uri
from .real import landing, pos

SASS = "code/device.sm_90.sass"


@pytest.fixture(scope="module")
def workspace(tmp_path_factory, bundles):
    folder = tmp_path_factory.mktemp("sass-ws")
    shutil.copytree(bundles.get(MODELS_DIR / "small_cnn_fp32.tflite", "cuda", "--sass"), folder / "cnn.bundle")
    return folder, Bundle(folder / "cnn.bundle")


@pytest_lsp.fixture(config=SERVER, scope="module")
async def client(lsp_client: LanguageClient, workspace):
    lsp_client.init_result = await start_session(lsp_client, workspace[0], expect=1)
    yield
    await lsp_client.shutdown_session()


def _conv_fma(bundle: Bundle) -> tuple[int, int]:
    """Offset of the first FFMA of the conv kernel, and the CUDA line (1-based) it names."""
    text = bundle.text(SASS)
    start = text.index("\nfused_conv2d_add_relu_kernel:")
    at = text.index(" FFMA ", start) + 1
    line_end = text.index("\n", at)
    return at, int(re.search(r"device\.cu:(\d+)", text[at:line_end]).group(1))


async def test_definition_goes_to_the_cuda_line_then_the_layer(client, workspace):
    bundle = workspace[1]
    at, cuda_line = _conv_fma(bundle)
    doc = types.TextDocumentIdentifier(uri(bundle.root / SASS))
    got = await client.text_document_definition_async(types.DefinitionParams(doc, pos(bundle.text(SASS), at)))
    assert got, "no definition"
    path, _, line = landing(bundle, got[0])
    assert path == "code/device.cu" and got[0].range.start.line == cuda_line - 1, (path, line)
    assert line.strip() == bundle.text("code/device.cu").split("\n")[cuda_line - 1].strip()
    assert any(landing(bundle, loc)[0] == "model.tflgraph" for loc in got[1:])


async def test_declaration_is_one_level_back_the_cuda_line(client, workspace):
    bundle = workspace[1]
    at, cuda_line = _conv_fma(bundle)
    doc = types.TextDocumentIdentifier(uri(bundle.root / SASS))
    got = await client.text_document_declaration_async(types.DeclarationParams(doc, pos(bundle.text(SASS), at)))
    assert [(landing(bundle, loc)[0], loc.range.start.line) for loc in got] == [("code/device.cu", cuda_line - 1)]


async def test_hover_names_the_conv_layer(client, workspace):
    bundle = workspace[1]
    at, _ = _conv_fma(bundle)
    doc = types.TextDocumentIdentifier(uri(bundle.root / SASS))
    got = await client.text_document_hover_async(types.HoverParams(doc, pos(bundle.text(SASS), at)))
    assert got is not None and "CONV\\_2D** `small_cnn_1/conv2d_1`" in got.contents.value


async def test_references_of_a_layer_include_its_machine_code(client, workspace):
    bundle = workspace[1]
    model = bundle.text("model.tflgraph")
    at = model.index("CONV_2D")
    doc = types.TextDocumentIdentifier(uri(bundle.root / "model.tflgraph"))
    got = await client.text_document_references_async(
        types.ReferenceParams(
            context=types.ReferenceContext(include_declaration=False), text_document=doc, position=pos(model, at)
        )
    )
    assert any(landing(bundle, loc)[0] == SASS for loc in got)


async def test_stages_side_by_side_include_the_machine_code(client, workspace):
    """From the conv's FMA the other stages show the conv; from the CUDA line it came from, the
    SASS column shows instructions of that kernel only."""
    from .test_stage_jumps import plain

    bundle = workspace[1]
    at, cuda_line = _conv_fma(bundle)
    doc = types.TextDocumentIdentifier(uri(bundle.root / SASS))
    got = plain(
        await client.protocol.send_request_async(
            "tvmExplorer/stageRanges", types.TextDocumentPositionParams(doc, pos(bundle.text(SASS), at))
        )
    )
    by_doc = {d["uri"].rsplit("cnn.bundle/", 1)[1]: d["ranges"] for d in got["documents"]}
    assert by_doc.get("model.tflgraph") and by_doc.get("code/device.cu"), list(by_doc)
    cu = bundle.text("code/device.cu")
    line = bundle.offset_of("code/device.cu", cuda_line - 1, 0)
    kernel = line + len(cu[line:].split("\n")[0]) - len(cu[line:].split("\n")[0].lstrip()) - 5
    cu_doc = types.TextDocumentIdentifier(uri(bundle.root / "code/device.cu"))
    back = plain(
        await client.protocol.send_request_async(
            "tvmExplorer/stageRanges", types.TextDocumentPositionParams(cu_doc, pos(cu, kernel + 5))
        )
    )
    sass_ranges = next(d["ranges"] for d in back["documents"] if d["uri"].endswith(SASS))
    lines = bundle.text(SASS).split("\n")
    start = lines.index("fused_conv2d_add_relu_kernel:")
    end = next(i for i in range(start + 1, len(lines)) if lines[i].startswith("// "))
    assert sass_ranges and all(start - 2 <= r["start"]["line"] <= end for r in sass_ranges)


async def test_machine_code_is_colored(client, workspace):
    """Opcode, predicate, registers, immediates and the CUDA-line comment of an instruction."""
    bundle = workspace[1]
    text = bundle.text(SASS)
    doc_uri = uri(bundle.root / SASS)
    client.text_document_did_open(types.DidOpenTextDocumentParams(types.TextDocumentItem(doc_uri, "tvm-sass", 1, text)))
    lines = text.split("\n")
    n = next(i for i, line in enumerate(lines) if line.startswith("  /*") and "@" in line and "R" in line)
    got = await client.text_document_semantic_tokens_range_async(
        types.SemanticTokensRangeParams(
            types.TextDocumentIdentifier(doc_uri), types.Range(types.Position(n, 0), types.Position(n, 0))
        )
    )
    legend = client.init_result.capabilities.semantic_tokens_provider.legend.token_types
    words, col = {}, 0
    for i in range(0, len(got.data), 5):
        dl, dc, length, kind, _ = got.data[i : i + 5]
        col = col + dc if dl == 0 and i else dc
        words[lines[n][col : col + length]] = legend[kind]
    opcode = lines[n].split()[2]
    assert words[opcode] == "keyword" and words[lines[n].split()[1]] == "macro", words
    assert any(w.startswith("R") and k == "type" for w, k in words.items()), words
    assert any(w.startswith("// device.cu:") and k == "comment" for w, k in words.items()), words

"""A bundle written by ``tvm-explorer bisect -o`` with a planted Relax pass: the pass list marks
the culprit, and hover in the culprit's diff documents shows a layer's error before and after."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from lsprotocol import types
from pytest_lsp import LanguageClient

from tvm_explorer.bundle.reader import Bundle

from .conftest import position_of, uri, workspace_client

NUMERICS_TESTS = Path(__file__).resolve().parents[1] / "numerics"


@pytest.fixture(scope="module")
def workspace(tmp_path_factory) -> Path:
    from tests.tflite_builder import conv_add_relu_dense

    root = tmp_path_factory.mktemp("bisect-ws")
    model = root / "gt.tflite"
    conv_add_relu_dense(model)
    (root / "ws").mkdir()
    subprocess.run([sys.executable, "-m", "tvm_explorer", "bisect", str(model), "--pipeline",
                    "planted_pipes:with_planted_add", "-o", str(root / "ws" / "bisected")],
                   cwd=NUMERICS_TESTS, check=True, capture_output=True, timeout=900)
    return root / "ws"


client = workspace_client()


async def test_pass_list_marks_the_culprit(client: LanguageClient, workspace):
    result = await client.protocol.send_request_async(
        "tvmExplorer/listPasses", {"bundle": uri(workspace / "bisected")})
    marked = [p for p in result.passes if p.culprit]
    assert [(p.index, p.name) for p in marked] == [(3, "PlantedAddToSubtract")]
    assert marked[0].after.endswith("relax/003-PlantedAddToSubtract.relax")


async def test_hover_in_the_culprit_diff_shows_the_layer_error_before_and_after(client: LanguageClient, workspace):
    bundle = Bundle(workspace / "bisected")
    path = "relax/003-PlantedAddToSubtract.relax"
    text = bundle.text(path)
    needle = next(line for line in text.split("\n") if "R.subtract" in line).strip()
    hover = await client.text_document_hover_async(types.HoverParams(
        types.TextDocumentIdentifier(uri(bundle.root / path)), position_of(text, needle, delta=2)))
    value = hover.contents.value
    assert "**Bisect**: culprit relax pass 3 `PlantedAddToSubtract`" in value
    assert "op 1 ADD: max abs error 0 before → 0.152 after" in value
    # elsewhere (a later pass), no bisect lines
    later = "relax/004-LegalizeOps.relax"
    ltext = bundle.text(later)
    line = next(x for x in ltext.split("\n") if "R.call_tir" in x).strip()
    hover = await client.text_document_hover_async(types.HoverParams(
        types.TextDocumentIdentifier(uri(bundle.root / later)), position_of(ltext, line, delta=2)))
    assert hover is None or "**Bisect**" not in hover.contents.value

"""A bundle written by ``tvm-explorer bisect -o`` with a planted Relax pass: the pass list marks
the culprit, and hover in the culprit's diff documents shows a layer's error before and after."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from lsprotocol import types
from pytest_lsp import LanguageClient
from tests.conftest import run_cli

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
    run_cli(
        "bisect",
        model,
        "--pipeline",
        "planted_pipes:with_planted_add",
        "-o",
        root / "ws" / "bisected",
        cwd=NUMERICS_TESTS,
        check=True,
    )
    return root / "ws"


client = workspace_client()


async def test_pass_list_marks_the_culprit(client: LanguageClient, workspace):
    result = await client.protocol.send_request_async("tvmExplorer/listPasses", {"bundle": uri(workspace / "bisected")})
    marked = [p for p in result.passes if p.culprit]
    assert [(p.index, p.name) for p in marked] == [(3, "PlantedAddToSubtract")]
    assert marked[0].after.endswith("relax/003-PlantedAddToSubtract.relax")


async def test_hover_in_the_culprit_diff_shows_the_layer_error_before_and_after(client: LanguageClient, workspace):
    bundle = Bundle(workspace / "bisected")
    path = "relax/003-PlantedAddToSubtract.relax"
    text = bundle.text(path)
    needle = next(line for line in text.split("\n") if "R.subtract" in line).strip()
    hover = await client.text_document_hover_async(
        types.HoverParams(types.TextDocumentIdentifier(uri(bundle.root / path)), position_of(text, needle, delta=2))
    )
    value = hover.contents.value
    assert "**Bisect**: culprit relax pass 3 `PlantedAddToSubtract`" in value
    assert "op 1 ADD: max abs error 0 before → 0.152 after" in value
    # elsewhere (a later pass), no bisect lines
    later = "relax/004-LegalizeOps.relax"
    ltext = bundle.text(later)
    line = next(x for x in ltext.split("\n") if "R.call_tir" in x).strip()
    hover = await client.text_document_hover_async(
        types.HoverParams(types.TextDocumentIdentifier(uri(bundle.root / later)), position_of(ltext, line, delta=2))
    )
    assert hover is None or "**Bisect**" not in hover.contents.value


def _json(x):
    """Plain JSON of a custom answer (the client makes named tuples of it, which rename the
    field called ``pass``, a Python keyword, to ``_<its position>``)."""
    if hasattr(x, "_asdict"):
        return {("pass" if re.fullmatch(r"_\d+", k) else k): _json(v) for k, v in x._asdict().items()}
    if isinstance(x, (list, tuple)):
        return [_json(v) for v in x]
    return x


async def _history(client, bundle, path, needle):
    text = bundle.text(path)
    return _json(
        await client.protocol.send_request_async(
            "tvmExplorer/layerHistory",
            types.TextDocumentPositionParams(
                types.TextDocumentIdentifier(uri(bundle.root / path)), position_of(text, needle)
            ),
        )
    )


def _side_lines(bundle, side):
    rel = side["uri"][len(uri(bundle.root)) + 1 :]
    lines = bundle.text(rel).split("\n")
    return rel, [line for r in side["ranges"] for line in lines[r["start"]["line"] : r["end"]["line"] + 1]]


async def test_layer_history_names_the_planted_pass_and_its_numerics(client: LanguageClient, workspace):
    """Issue 41 on the real server: the ADD a custom pipeline pass rewrites in place, then
    fuses with the conv and the relu; bisect's numerics mark sits on the planted pass."""
    bundle = Bundle(workspace / "bisected")
    got = await _history(client, bundle, "model.tflgraph", "op 1 ADD")
    assert [(lay["op_index"], lay["opcode"]) for lay in got["layers"]] == [(1, "ADD")]
    assert got["hidden"] == got["passes"] - len(got["steps"]) and got["bundle"] == uri(bundle.root)
    names = [s["pass"]["name"] for s in got["steps"]]
    assert names[:3] == ["import", "PlantedAddToSubtract", "LegalizeOps"]
    planted = got["steps"][1]
    assert planted["summary"] == "1 binding rewritten (R.add → R.subtract)"
    assert planted["changes"] == ["rewritten"] and planted["marks"] == ["numerics"]
    mark = next(m for m in got["marks"] if m["kind"] == "numerics")
    assert re.fullmatch(r"numerics changed here \(bisect\): max abs error 0 → 0\.1\d+", mark["text"]), mark["text"]
    assert mark["step"] == 1 and mark["pass"] == {"index": 3, "name": "PlantedAddToSubtract"}
    # Its diff: the ADD's own binding before and after the pass, nothing of the conv or relu.
    before, old = _side_lines(bundle, planted["before"])
    after, new = _side_lines(bundle, planted["after"])
    assert after == "relax/003-PlantedAddToSubtract.relax" and before.startswith("relax/000-")
    assert any("R.add(" in line for line in old) and any("R.subtract(" in line for line in new)
    assert not any("R.nn.conv2d(" in line or "R.nn.relu(" in line for line in old + new)
    fuse = got["steps"][names.index("FuseOps")]
    assert fuse["summary"] == "fused with op 0 (CONV_2D) and op 2 (RELU) into fused_conv2d_add_subtract_relu"
    assert "fused" in fuse["changes"]
    assert (
        got["steps"][-1]["summary"].startswith("LLVM IR: ")
        and "fused_conv2d_add_subtract_relu" in got["steps"][-1]["summary"]
    )
    # On the fused kernel's header: the whole group, followed together.
    tir = [d.path for d in bundle.documents if d.stage == "tir"][-1]
    group = await _history(client, bundle, tir, "def fused_conv2d_add_subtract_relu(")
    assert [lay["op_index"] for lay in group["layers"]] == [0, 1, 2]
    summaries = {s["pass"]["name"]: s["summary"] for s in group["steps"]}
    assert summaries["FuseOps"] == (
        "op 0 (CONV_2D), op 1 (ADD) and op 2 (RELU) fused into fused_conv2d_add_subtract_relu"
    )
    assert summaries["FuseTIR"] == "4 PrimFuncs → 1 (fused_conv2d_add_subtract_relu)"  # conv2d, add, subtract, relu
    # A blank line of the model document stands for no layer.
    blank = _json(
        await client.protocol.send_request_async(
            "tvmExplorer/layerHistory",
            types.TextDocumentPositionParams(
                types.TextDocumentIdentifier(uri(bundle.root / "model.tflgraph")), types.Position(3, 0)
            ),
        )
    )
    assert blank["layers"] == [] and blank["steps"] == []

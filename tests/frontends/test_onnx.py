"""ONNX models through TVM's own importer with spans: bundles, coverage, origins, bad input."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import tvm_ffi

from conftest import MODELS, run_cli
from frontends.bundle_checks import assert_full_coverage as _assert_full_coverage  # noqa: E402
from frontends.bundle_checks import lines_matching as _lines  # noqa: E402
from frontends.bundle_checks import origins as _origins  # noqa: E402
from frontends.onnx_graphs import NODES, conv_block
from tvm_explorer.bundle.reader import Bundle
from tvm_explorer.frontends import import_any, load_any
from tvm_explorer.provenance import OriginTable

SILERO = MODELS / "silero_vad_op18_ifless.onnx"
SQUEEZENET = MODELS / "light_squeezenet.onnx"
PPOCR = MODELS / "ch_ppocr_mobile_v2.0_cls_mobile.onnx"


@pytest.fixture(scope="session")
def block_model(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("onnx") / "conv_block.onnx"
    conv_block(path)
    return path


@pytest.mark.parametrize("target", ["c", "cuda"])
def test_constructed_graph_origins_by_node_name(block_model, bundles, target):
    out = bundles.get(block_model, target)
    _assert_full_coverage(out)
    b = Bundle(out)
    assert b.manifest["model"]["kind"] == "onnx"
    assert [lay.name for lay in b.layers] == list(NODES)
    assert [lay.opcode for lay in b.layers] == list(NODES.values())
    # Each Relax op of the import comes from exactly the node that makes it, as its output.
    relax_doc = next(d.path for d in b.documents if d.stage == "relax")
    for op, name in (
        ("R.nn.conv2d", "/backbone/conv/Conv"),
        ("R.nn.relu", "/backbone/act/Relu"),
        ("R.add", "/head/bias/Add"),
        ("R.sigmoid", "/head/gate/Sigmoid"),
        ("R.multiply", "/head/scale/Mul"),
    ):
        (line,) = _lines(out, relax_doc, re.escape(op) + r"\(")
        found = _origins(out, f"{relax_doc}:{line}")
        assert [(o["name"], o["is_output"]) for o in found] == [(name, True)], op
    code = "code/module.c" if target == "c" else "code/device.cu"
    # The computing statement of each node (buffers are reused, so match the computation).
    checks = (
        (r"\] = \(?\w+\[.*\] \+ \(pad_temp", "/backbone/conv/Conv"),
        (r"\) > \(0\.0+e\+00f\)", "/backbone/act/Relu"),
        (r"e\+00f \+ expf", "/head/gate/Sigmoid"),
    )
    if target == "cuda":  # dlight's schedule: the conv accumulates in a local reindexed buffer
        checks = ((r"conv2d_nchw_intermediate_reindex_pad_local_ptr\[\d+\] = ", "/backbone/conv/Conv"),)
    for pattern, name in checks:
        lines = _lines(out, code, pattern)
        assert lines, pattern
        for line in lines:
            assert name in {o["name"] for o in _origins(out, f"{code}:{line}")}, (pattern, line)


def test_model_document_groups_nodes_under_modules(block_model, bundles):
    out = bundles.get(block_model, "c")
    text = (out / "model.onnxgraph").read_text()
    assert text.startswith("# ONNX model conv_block.onnx\n")
    for module in ("backbone.conv", "backbone.act", "head.bias", "head.gate", "head.scale"):
        assert f"\nmodule {module}\n" in text
    assert "node 0 Conv /backbone/conv/Conv  kernel_shape=[3,3] pads=[1,1,1,1]" in text
    assert re.search(r"in   x\s+float32\[1,3,8,8\]", text)
    assert re.search(r"out  conv_out\s+float32\[1,4,8,8\]", text)
    assert re.search(r"in   conv\.weight\s+float32\[4,3,3,3\] const", text)


@pytest.mark.parametrize("target", ["c", "cuda"])
def test_silero_vad_bundle(bundles, target):
    out = bundles.get(SILERO, target)
    _assert_full_coverage(out)
    b = Bundle(out)
    code = [p for p in b.manifest["passes"] if p["name"] in ("codegen (c)", "codegen (cuda)")]
    assert code and all(p["attributed"] >= 0.99 * p["units"] > 0 for p in code)
    # The dynamo exporter's metadata: module scopes and the user's source line.
    assert sum(lay.source is not None for lay in b.layers) >= 80
    text = (out / "model.onnxgraph").read_text()
    assert "source 3806684016.py:" in text or "source ipykernel_6181/3806684016.py:" in text


def test_squeezenet_bundle(bundles):
    out = bundles.get(SQUEEZENET, "c")
    _assert_full_coverage(out)
    b = Bundle(out)
    assert len(b.layers) > 60 and {"Conv", "Relu", "Concat", "MaxPool"} <= {lay.opcode for lay in b.layers}


def test_squeezenet_concat_kernels_are_the_concat_layers(bundles):
    """After CallTIRRewrite a kernel call writes into a fresh allocation: it computes what the
    allocation is renamed to (the Concat's output), not work of the Conv/Relu layers it reads
    (the data flow alone gave it all five layers, none as output)."""
    out = bundles.get(SQUEEZENET, "c")
    passes = Bundle(out).manifest["passes"]
    rewritten = next(p["after"] for p in passes if p["name"] == "CallTIRRewrite")
    last = [p["after"] for p in passes if p["stage"] == "relax" and p.get("after")][-1]
    for doc in (rewritten, last):
        calls = _lines(out, doc, r"^ +(_\d* = )?concatenate\d*\(")
        assert len(calls) >= 4, doc
        for line in calls:
            text = (out / doc).read_text().split("\n")[line - 1]
            got = _origins(out, f"{doc}:{line}:{text.index('concatenate') + 1}")
            assert [(o["opcode"], o["is_output"]) for o in got] == [("Concat", True)], (doc, line, got)


def test_squeezenet_conv_history_names_its_fusion_and_kernel(bundles):
    """Layer history (issue 41) of an ONNX node: the first Conv, fused with the Relu after it."""
    from tvm_explorer.bundle.reader import Bundle
    from tvm_explorer.history.steps import layer_history
    from tvm_explorer.navigation.view import BundleView

    bundle = Bundle(bundles.get(SQUEEZENET, "c"))
    conv = next(lay for lay in bundle.layers if lay.name == "n0")
    relu = next(lay for lay in bundle.layers if lay.name == "n1")
    steps = {s.pass_name: s for s in layer_history(BundleView(bundle), [conv.id]).steps}
    assert steps["import"].summary == "3 bindings: R.nn.conv2d, R.reshape, R.add"
    assert steps["FuseOps"].summary == f"fused with op {relu.op_index} (Relu) into fused_conv2d_add_relu"
    assert steps["FuseTIR"].summary == "3 PrimFuncs → 1 (fused_conv2d_add_relu)"
    assert steps["codegen (c)"].summary.startswith("C: 1 function fused_conv2d_add_relu (")
    # the import's diff: the node's entry in the model document → its Relax bindings
    assert steps["import"].before.text.lstrip().startswith(f"node {conv.op_index} Conv n0")


@pytest.mark.parametrize("path", [SILERO, SQUEEZENET], ids=["silero", "squeezenet"])
def test_import_is_structurally_the_stock_import(path):
    model = load_any(path)
    stock = import_any(model, None, fill_spans=False)
    ours = import_any(model, OriginTable())
    assert tvm_ffi.structural_equal(stock, ours)


def test_generated_c_identical_to_stock_build(block_model, tmp_path):
    from tvm_explorer.app.compile import compile_model
    from tvm_explorer.capture.pipeline import generated_sources

    # (Not silero: with symbolic shapes, two stock builds already order its shape function's
    # statements differently.)
    for path in (block_model, SQUEEZENET):
        stock = compile_model(path, None, "c", fill_spans=False).executable
        ours = compile_model(path, tmp_path / f"{Path(path).stem}.bundle", "c").executable
        assert generated_sources(stock, "c") == generated_sources(ours, "c"), path


def _one_message(proc, *expected):
    assert proc.returncode != 0
    assert "Traceback" not in proc.stderr
    lines = [line for line in proc.stderr.splitlines() if line.startswith("tvm-explorer: error:")]
    assert len(lines) == 1, proc.stderr
    for text in expected:
        assert text in lines[0], lines[0]
    return lines[0]


def test_bad_onnx_inputs(tmp_path, block_model):
    not_onnx = tmp_path / "notes.onnx"
    not_onnx.write_text("this is not a model\n" * 20)
    truncated = tmp_path / "truncated.onnx"
    truncated.write_bytes(SILERO.read_bytes()[:4000])
    unsupported = tmp_path / "unsupported.onnx"
    conv_block(unsupported, op_for_gate="BlackmanWindow")
    for path, expected in (
        (not_onnx, ("notes.onnx", "not an ONNX model")),
        (truncated, ("truncated.onnx", "ONNX model")),
        (unsupported, ("unsupported.onnx", "node 3", "BlackmanWindow", "/head/gate/BlackmanWindow")),
        (
            PPOCR,
            ("ch_ppocr_mobile_v2.0_cls_mobile.onnx", "Reshape", "Reshape requires the input new shape to be Shape"),
        ),
    ):
        out = tmp_path / f"{path.stem}.bundle"
        _one_message(run_cli("compile", path, "-o", out), *expected)
        assert not out.exists()


def test_capture_from_onnx_model_in_memory(tmp_path):
    import tvm

    from tvm_explorer.app.compile import Capture

    proto = conv_block(tmp_path / "block.onnx")
    with Capture.from_onnx(proto, tmp_path / "block.bundle") as cap:
        cap.add_executable(tvm.compile(cap.module, tvm.target.Target("c"), relax_pipeline=cap.pipeline("c")))
    b = Bundle(cap.bundle)
    assert [lay.name for lay in b.layers] == list(NODES)
    assert all(p["attributed"] == p["units"] for p in b.manifest["passes"] if p["stage"] == "relax")
    assert b.document("code/module.c") is not None


def test_plain_origins_name_the_node(block_model, bundles):
    out = bundles.get(block_model, "c")
    relax_doc = next(d.path for d in Bundle(out).documents if d.stage == "relax")
    (line,) = _lines(out, relax_doc, re.escape("R.nn.conv2d") + r"\(")
    text = run_cli("origins", out, f"{relax_doc}:{line}", check=True).stdout.strip()
    assert text.startswith("op 0 Conv /backbone/conv/Conv (layer output) -> "), text

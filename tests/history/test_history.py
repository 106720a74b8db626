"""A layer's history through the passes (issue 41) on real compiles whose history is known:
the test's CONV_2D → ADD → RELU → RESHAPE → FULLY_CONNECTED model, whose conv, add and relu
FuseOps fuses into one function and FuseTIR into one kernel, and small_cnn_int8, whose conv
layers end up in two kernels each. Both bundles are the session's (tests/conftest.py)."""

from __future__ import annotations

import json

import pytest

from conftest import run_cli
from tvm_explorer.bundle.reader import Bundle
from tvm_explorer.history.code import normalized
from tvm_explorer.history.steps import layer_history, transitions
from tvm_explorer.navigation.view import BundleView


@pytest.fixture(scope="module")
def gt(bundles, gt_model) -> BundleView:
    return BundleView(Bundle(bundles.get(gt_model, "c")))


def by_pass(history):
    return {s.pass_name: s for s in history.steps}


def test_the_conv_add_relu_fusion_is_named_with_its_kernel(gt):
    history = layer_history(gt, [0])
    steps = by_pass(history)
    indexes = [s.pass_index for s in history.steps]
    assert indexes == sorted(indexes) and history.steps[0].pass_name == "import"
    assert history.steps[-1].pass_name == "codegen (c)"
    assert steps["import"].summary == "2 bindings: R.nn.conv2d, R.add"  # the conv and its bias add
    assert steps["LegalizeOps"].summary == "2 bindings → call_tir conv2d, add"
    assert steps["FuseOps"].summary == "fused with op 1 (ADD) and op 2 (RELU) into fused_conv2d_add_add_relu"
    assert "fused" in steps["FuseOps"].changes
    assert steps["FuseTIR"].summary == "2 PrimFuncs → 1 (fused_conv2d_add_add_relu)"
    assert steps["codegen (c)"].summary.startswith("C: 1 function fused_conv2d_add_add_relu (4 statements")
    assert any(s.summary.endswith("statements changed; 3 loops changed") for s in history.steps if s.stage == "tir")
    # The three layers followed together: their fusion, and three PrimFuncs become one.
    group = by_pass(layer_history(gt, [0, 1, 2]))
    assert group["FuseOps"].summary == (
        "op 0 (CONV_2D), op 1 (ADD) and op 2 (RELU) fused into fused_conv2d_add_add_relu"
    )
    assert group["FuseTIR"].summary == "3 PrimFuncs → 1 (fused_conv2d_add_add_relu)"
    # The largest code-size change within a stage is marked (costs.json has no profile: no cost mark).
    assert [m.kind for m in history.marks] == ["size"]
    marked = history.steps[history.marks[0].step]
    assert all(
        abs(s.after.line_count - s.before.line_count) <= abs(marked.after.line_count - marked.before.line_count)
        for s in history.steps
        if s.before.stage == s.after.stage
    )


def _own_texts(view, path, layer):
    """The texts of every range of ``path`` whose origins are ``layer`` alone (whitespace aside)."""
    layers = view.layer_map.layers_of_set
    text = view.bundle.text(path)
    return sorted(
        normalized(text[r.start : r.end]) for r in view.layer_map.ranges(layer, path) if layers[r.origin_set] == {layer}
    )


def test_only_passes_that_changed_the_layer_are_steps(gt):
    for layer in (0, 1, 3):
        history = layer_history(gt, [layer])
        listed = {s.after.path for s in history.steps}
        for before, embedded, after in transitions(gt):
            if after.path in listed:
                step = next(s for s in history.steps if s.after.path == after.path)
                assert step.after.stage == "code" or step.before.normalized_lines != step.after.normalized_lines
            elif not embedded and before.stage == after.stage:
                # A pass it is not listed for left every range of the layer alone.
                assert _own_texts(gt, before.path, layer) == _own_texts(gt, after.path, layer), (layer, after.path)
        assert len(history.steps) < len([d for d in gt.bundle.documents if d.stage != "model"])


def test_each_step_diff_holds_only_the_layers_lines(gt):
    layers_of = gt.layer_map.layers_of_set
    for group in ([0], [2], [0, 1, 2]):
        for step in layer_history(gt, group).steps:
            for code in (step.before, step.after):
                index = gt.bundle.index(code.path)
                for start, _end, text in code.pieces:
                    at = start
                    for line in text.split("\n"):
                        # every line shown meets a range holding one of the layers
                        assert any(
                            r.start < at + max(len(line), 1) and r.end > at and layers_of[r.origin_set] & set(group)
                            for r in gt.layer_map.ranges(group[0], code.path)
                            + [x for g in group[1:] for x in gt.layer_map.ranges(g, code.path)]
                        ), (group, code.path, line)
                        at += len(line) + 1
                assert index  # the document is indexed
    # In the fused kernel, the conv's lines are not the relu's, and the other way round.
    conv = by_pass(layer_history(gt, [0]))["FuseTIR"].after.text
    relu = by_pass(layer_history(gt, [2]))["FuseTIR"].after.text
    assert "def fused_conv2d_add_add_relu(" in conv and "def fused_conv2d_add_add_relu(" in relu
    assert "T.max(" not in conv and "T.max(" in relu
    assert "pad_temp" in conv and "pad_temp" not in relu


def test_a_layer_lowered_to_two_kernels(bundles, models_dir):
    view = BundleView(Bundle(bundles.get(models_dir / "small_cnn_int8.tflite", "c")))
    steps = by_pass(layer_history(view, [2]))  # op 2 CONV_2D: its kernel and the pool's dequantize
    assert steps["FuseOps"].summary == (
        "its 4 bindings fused into fused_conv2d1_add1_quantize1_tir_clip1 (no other "
        "layer); fused with op 1 (MAX_POOL_2D) into fused_max_pool2d_dequantize3"
    )
    assert steps["FuseTIR"].summary.startswith(
        "7 PrimFuncs → 2 (fused_conv2d1_add1_quantize1_tir_clip1, fused_max_pool2d_dequantize3)"
    )
    assert steps["codegen (c)"].summary.startswith(
        "C: 2 functions fused_conv2d1_add1_quantize1_tir_clip1, fused_max_pool2d_dequantize3"
    )


def test_cli_history_text_json_and_errors(bundles, gt_model):
    bundle = bundles.get(gt_model, "c")
    out = run_cli("history", bundle, "conv", "--diff", check=True).stdout
    assert out.startswith("op 0 (CONV_2D) conv/output: ")
    assert "FuseOps" in out and "+++ relax/007-FuseOps.relax" in out and "◆ largest code-size change" in out
    data = json.loads(run_cli("history", bundle, "0,1,2", "--json", check=True).stdout)
    assert set(data) == {"bundle", "target", "layers", "passes", "hidden", "steps", "marks"}
    assert [lay["op_index"] for lay in data["layers"]] == [0, 1, 2]
    assert data["hidden"] == data["passes"] - len(data["steps"])
    fuse = next(s for s in data["steps"] if s["pass"]["name"] == "FuseOps")
    assert set(fuse) == {"pass", "summary", "changes", "lines", "before", "after", "marks"}
    assert fuse["pass"] == {"index": 7, "name": "FuseOps", "stage": "relax"}
    lines = Bundle(bundle).text(fuse["after"]["path"]).split("\n")
    shown = [lines[a - 1 : b] for a, b in fuse["after"]["lines"]]
    assert any("def fused_conv2d_add_add_relu(" in line for piece in shown for line in piece)
    assert data["marks"][0]["kind"] == "size" and isinstance(data["marks"][0]["step"], int)
    bad = run_cli("history", bundle, "99")
    assert bad.returncode == 2 and "no op 99 in subgraph 0" in bad.stderr and "Traceback" not in bad.stderr
    vague = run_cli("history", bundle, "output")
    assert vague.returncode == 2 and "names 5 layers" in vague.stderr


def test_the_graph_document_carries_the_pass_slider_states(gt):
    from tvm_explorer.graphview.document import graph_document

    passes = graph_document(gt, places=False)["pipeline"]["passes"]
    by = {p["name"]: p for p in passes}
    assert [p["document"] for p in passes] == [d.path for d in gt.bundle.documents if d.stage != "model"]
    assert by["LegalizeOps"]["lowered"] == ["0", "1", "2", "3", "4"]
    assert all(not p["lowered"] for p in passes if p["name"] != "LegalizeOps")
    # FuseOps puts conv, add and relu in one box (the dense layer's function holds it alone);
    # no later pass changes the boxes.
    assert by["FuseOps"]["fused"] == [["0", "1", "2"]]
    assert [p["name"] for p in passes if p["fused"] is not None] == ["FuseOps"]
    assert set(by["FuseOps"]["touched"]) >= {"0", "1", "2"}
    # FoldConstant folds the dense layer's weight transpose only; ToNonDataflow only re-indents.
    assert by["FoldConstant"]["touched"] == ["4"] and by["ToNonDataflow"]["touched"] == []
    # A pass the layer's history lists touched it.
    for step in layer_history(gt, [3]).steps:
        assert "3" in next(p for p in passes if p["index"] == step.pass_index)["touched"], step.pass_name


def test_a_profiled_bundle_marks_the_pass_that_made_the_measured_kernel(bundles, gt_model):
    # the session's profiled llvm bundle (the costs and numerics tests compile it too)
    view = BundleView(Bundle(bundles.get(gt_model, "llvm", "--numerics", "--profile")))
    history = layer_history(view, [0])
    cost = next(m for m in history.marks if m.kind == "cost")
    assert cost.pass_name == "FuseTIR" and history.steps[cost.step].pass_name == "FuseTIR"
    assert cost.text.startswith("measured ") and " ms in fused_conv2d_add_add_relu (the final code)" in cost.text

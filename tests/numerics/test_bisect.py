"""tvm-explorer bisect: ground truth by construction.

- a pipeline written for the test (planted_pipes.py) inserts a pass of its own that turns the
  ADD layer's Relax ``add`` into ``subtract`` at a known position (pass 3): bisect must name it,
  and the first layer it changes must be op 1 ADD;
- a planted TIR pass (planted_pipes.with_planted_tir) must be found by rebuilding with TIR
  passes left out;
- TVM's own pipeline on a float corpus model: no culprit.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from tests.conftest import run_cli

from conftest import MODELS

HERE = Path(__file__).resolve().parent


def bisect(*args):
    proc = run_cli("bisect", *map(str, args), cwd=HERE, timeout=900)
    return proc


def test_planted_relax_pass_is_the_culprit(gt_model, tmp_path):
    out = tmp_path / "planted.bundle"
    proc = bisect(gt_model, "--pipeline", "planted_pipes:with_planted_add", "-o", out, "--json")
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    assert data["culprit"] == {"index": 3, "name": "PlantedAddToSubtract", "stage": "relax"}
    assert data["error_before"] == 0 and data["error_after"] > 0.05
    assert data["first_divergence"] == {"subgraph": 0, "op_index": 1}
    assert data["layer"]["opcode"] == "ADD"
    assert data["diff"] == {"before": "relax/000-import.relax", "after": "relax/003-PlantedAddToSubtract.relax"}
    assert (out / data["diff"]["after"]).is_file() and "R.subtract" in (out / data["diff"]["after"]).read_text()
    assert json.loads((out / "bisect.json").read_text())["culprit"] == data["culprit"]
    names = [s["name"] for s in data["snapshots"]]
    assert names[0] == "import" and "PlantedAddToSubtract" in names
    assert len(names) < 10  # bisected, not one build per pass
    by_name = {s["name"]: s["max_abs"] for s in data["snapshots"]}
    assert by_name["import"] == 0 and by_name["PlantedAddToSubtract"] > 0.05


def test_text_report_names_pass_layer_and_diff(gt_model, tmp_path):
    out = tmp_path / "planted.bundle"
    proc = bisect(gt_model, "--pipeline", "planted_pipes:with_planted_add", "-o", out)
    assert proc.returncode == 0, proc.stderr
    assert "Culprit: relax pass 3 PlantedAddToSubtract" in proc.stdout
    assert "first layer changed by it: op 1 ADD add/output" in proc.stdout
    assert f"its diff: {out}/relax/003-PlantedAddToSubtract.relax" in proc.stdout


def test_planted_tir_pass_is_found_by_leaving_passes_out(gt_model):
    proc = bisect(gt_model, "--pipeline", "planted_pipes:with_planted_tir", "--json")
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    assert data["culprit"]["name"] == "PlantedTIRSubtract" and data["culprit"]["stage"] == "tir"
    assert data["error_before"] == 0 and data["error_after"] > 0.05
    assert data["first_divergence"] is not None
    assert 1 < data["tir_builds"] < 30


def test_a_pass_that_changes_its_input_in_place_is_blamed_not_the_pass_before(gt_model):
    """``mod[gv] = f`` on the module handed in (planted right after FoldConstant, which changed
    the module): the snapshot after FoldConstant must not change with it."""
    proc = bisect(gt_model, "--pipeline", "planted_pipes:with_in_place_planted_add", "--json")
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    assert data["culprit"]["name"] == "PlantedInPlace", data["snapshots"]
    by_name = {s["name"]: s["max_abs"] for s in data["snapshots"]}
    assert by_name.get("FoldConstant", 0) == 0 and by_name["PlantedInPlace"] > 0.05
    assert data["error_before"] == 0 and data["error_after"] > 0.05
    assert data["error_final"] == pytest.approx(data["error_after"], rel=1e-3)  # the real build


def test_the_compiled_models_error_is_in_the_report_without_a_culprit(gt_model):
    proc = bisect(gt_model, "--json")
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    assert data["culprit"] is None
    assert data["error_final"] is not None and data["error_final"] < 1e-4
    assert data["error_after"] == data["error_final"]
    text = bisect(gt_model)
    assert "the compiled model's outputs, max abs error: " in text.stdout, text.stdout


def test_tvms_pipeline_on_a_float_corpus_model_has_no_culprit():
    proc = bisect(MODELS / "small_cnn_fp32.tflite", "--target", "c", "--json")
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    assert data["culprit"] is None and data["first_divergence"] is None
    assert all(s["max_abs"] is not None and s["max_abs"] < 1e-4 for s in data["snapshots"])


@pytest.mark.parametrize(
    "args, message",
    [
        (["--target", "cuda"], "use --target llvm or c"),
        (["--pipeline", "planted_pipes:not_a_pass"], "not_a_pass(target) returned int"),
        (["--inputs", "missing.npz"], "missing.npz: no such inputs file"),
    ],
)
def test_bad_input_gets_one_message(gt_model, args, message):
    proc = bisect(gt_model, *args)
    assert proc.returncode == 2 and message in proc.stderr and "Traceback" not in proc.stderr


def test_a_crash_inside_tvm_is_one_message_and_no_bundle(gt_model, tmp_path):
    """bisect runs supervised, like compile: a native crash is reported, not inherited."""
    out = tmp_path / "crash.bundle"
    proc = bisect(gt_model, "--pipeline", "planted_pipes:crashes", "-o", out)
    assert proc.returncode == 3, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert lines[-1].startswith("tvm-explorer: error: ") and "crashed (SIGSEGV) while bisecting" in lines[-1]
    assert "Traceback" not in proc.stderr and not out.exists()
    assert not list(tmp_path.glob(".crash.bundle.tmp-*"))


def test_bisect_stops_at_its_timeout(gt_model, tmp_path):
    proc = bisect(gt_model, "--timeout", "0.5")
    assert proc.returncode == 4, proc.stderr
    assert proc.stderr.strip().endswith("(a previous bundle is unchanged)")
    assert "bisect did not finish within 0.5 s (--timeout)" in proc.stderr


# -- ONNX and PyTorch models -----------------------------------------------------------------


@pytest.fixture(scope="module")
def onnx_block(tmp_path_factory):
    """The constructed ONNX block (0 Conv, 1 Relu, 2 Add, 3 Sigmoid, 4 Mul) and a copy whose
    Add constant is changed by 0.5."""
    import numpy as np
    import onnx
    from onnx import numpy_helper

    from frontends.onnx_graphs import conv_block

    root = tmp_path_factory.mktemp("bisect-onnx")
    model = conv_block(root / "block.onnx")
    bias = next(t for t in model.graph.initializer if t.name == "head.bias")
    bias.CopyFrom(numpy_helper.from_array(numpy_helper.to_array(bias) + np.float32(0.5), "head.bias"))
    onnx.save(model, str(root / "block_changed.onnx"))
    return root / "block.onnx", root / "block_changed.onnx"


def test_onnx_planted_relax_pass_is_the_culprit(onnx_block, tmp_path):
    """The block's only Relax ``add`` is node 2's: the planted pass turns it into subtract."""
    out = tmp_path / "onnx.bundle"
    proc = bisect(onnx_block[0], "--pipeline", "planted_pipes:with_planted_first_add", "-o", out, "--json")
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    assert data["culprit"] == {"index": 3, "name": "PlantedAddToSubtract", "stage": "relax"}
    assert data["error_before"] == 0 and data["error_after"] > 0.05
    assert data["first_divergence"] == {"subgraph": 0, "op_index": 2}
    assert data["layer"]["opcode"] == "Add" and data["layer"]["name"] == "/head/bias/Add"
    assert "R.subtract" in (out / data["diff"]["after"]).read_text()
    unchanged = {row["op_index"]: row["after"] for row in data["layers"]}
    assert unchanged[0] == 0 and unchanged[1] == 0 and unchanged[2] > 0.05
    text = bisect(onnx_block[0], "--pipeline", "planted_pipes:with_planted_first_add")
    assert "first layer changed by it: node 2 Add /head/bias/Add" in text.stdout, text.stdout


def test_onnx_reference_that_differs_blames_the_import(onnx_block):
    """``--reference`` an ONNX file run by onnxruntime: a graph whose constant differs from the
    model's is departed from at the import (pass 0), first at node 2."""
    proc = bisect(onnx_block[0], "--reference", onnx_block[1], "--json")
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    assert data["baseline"].startswith("onnxruntime ") and data["baseline"].endswith("on block_changed.onnx")
    assert data["culprit"] == {"index": 0, "name": "import", "stage": "relax"}
    assert data["first_divergence"] == {"subgraph": 0, "op_index": 2}
    assert data["layer"]["max_abs"] == pytest.approx(0.5, rel=1e-3)
    same = bisect(onnx_block[0], "--reference", onnx_block[0], "--json")
    assert same.returncode == 0 and json.loads(same.stdout)["culprit"] is None


def test_pt2_planted_relax_pass_names_the_convolution(tmp_path):
    """The residual net's second Relax ``add`` is block1.conv1's bias (node 1): the planted
    pass changes it, and every layer is observed in the snapshots (the bias ``add`` after a
    ``reshape`` is the convolution's output, not its inner work)."""
    torch = pytest.importorskip("torch", reason="PyTorch is not installed (pip install -e '.[torch]')")
    from frontends import torch_nets

    ep, _args = torch_nets.resnet_program()
    torch.export.save(ep, tmp_path / "resnet.pt2")
    proc = bisect(tmp_path / "resnet.pt2", "--pipeline", "planted_pipes:with_planted_add", "--json")
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    assert data["culprit"]["name"] == "PlantedAddToSubtract"
    assert data["first_divergence"] == {"subgraph": 0, "op_index": 1}
    assert data["layer"]["opcode"] == "aten.convolution.default"
    assert data["layer"]["name"] == "block1.conv1/convolution_1"
    rows = {row["op_index"]: row for row in data["layers"]}
    assert sorted(rows) == list(range(13))
    assert rows[0]["after"] == 0 and rows[1]["after"] > 0.05


def test_json_progress_covers_the_compile_and_every_build_of_the_search(gt_model, tmp_path):
    """``--progress json`` (what Bisect Model… reads): the compile's steps, then one ``run``
    step per snapshot or rebuild as it starts, naming it; the report follows as one object."""
    out = tmp_path / "p.bundle"
    proc = bisect(gt_model, "--pipeline", "planted_pipes:with_planted_add", "-o", out, "--json", "--progress", "json")
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    events = [json.loads(line) for line in lines if line.startswith('{"event": "progress"')]
    stages = [e["stage"] for e in events]
    assert stages[0] == "import" and "relax" in stages and stages[-1] == "write"
    runs = [e["name"] for e in events if e["stage"] == "run"]
    assert runs and all(r.startswith("bisect: ") for r in runs)
    assert runs[0] == "bisect: the module after import (pass 0)"  # the baseline
    assert "bisect: the module after PlantedAddToSubtract (pass 3)" in runs
    assert [e["done"] for e in events] == list(range(1, len(events) + 1))
    report = json.loads("\n".join(lines[lines.index("{") :]))
    assert report["culprit"]["name"] == "PlantedAddToSubtract"

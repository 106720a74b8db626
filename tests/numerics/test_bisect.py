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
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import MODELS

HERE = Path(__file__).resolve().parent


def bisect(*args):
    proc = subprocess.run([sys.executable, "-m", "tvm_explorer", "bisect", *map(str, args)], cwd=HERE,
                          capture_output=True, text=True, timeout=900)
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


def test_tvms_pipeline_on_a_float_corpus_model_has_no_culprit():
    proc = bisect(MODELS / "small_cnn_fp32.tflite", "--target", "c", "--json")
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    assert data["culprit"] is None and data["first_divergence"] is None
    assert all(s["max_abs"] is not None and s["max_abs"] < 1e-4 for s in data["snapshots"])


@pytest.mark.parametrize("args, message", [
    (["--target", "cuda"], "use --target llvm or c"),
    (["--pipeline", "planted_pipes:not_a_pass"], "not_a_pass(target) returned int"),
    (["--inputs", "missing.npz"], "missing.npz: no such inputs file"),
])
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

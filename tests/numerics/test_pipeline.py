"""compile --pipeline MODULE:FUNCTION (or FILE.py:FUNCTION): a pipeline of the user's own, tracked like TVM's, and
one clear message for every way a pipeline spec can fail."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent


def run_here(*args, cwd=HERE, env=None):
    """The CLI run from this directory (so that ``planted_pipes`` imports from the cwd)."""
    return subprocess.run(
        [sys.executable, "-m", "tvm_explorer", *map(str, args)],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
    )


@pytest.fixture(scope="module")
def planted_bundle(gt_model, tmp_path_factory):
    out = tmp_path_factory.mktemp("pipe") / "planted.bundle"
    proc = run_here("compile", gt_model, "-o", out, "--target", "llvm", "--pipeline", "planted_pipes:with_planted_add")
    assert proc.returncode == 0, proc.stderr
    return out


def test_a_pass_of_the_users_own_is_recorded_at_its_position(planted_bundle):
    from tvm_explorer.bundle.reader import Bundle

    b = Bundle(planted_bundle)
    passes = b.manifest["passes"]
    names = [p["name"] for p in passes]
    assert names[:5] == ["import", "DispatchSampling", "DispatchSortScan", "PlantedAddToSubtract", "LegalizeOps"]
    planted = passes[3]
    assert planted["changed"] and planted["attributed"] == planted["units"]
    after = b.text(planted["after"])
    assert after.count("R.subtract") == 1 and "R.subtract" not in b.text(planted["before"])
    assert b.manifest["options"]["pipeline"] == "planted_pipes:with_planted_add"
    # provenance goes on through TVM's passes after it, down to the generated code
    assert all(p["attributed"] == p["units"] for p in passes if p["stage"] == "relax")
    assert any(d.stage == "code" for d in b.documents)


def test_a_module_pass_pipeline_is_recorded_pass_by_pass(gt_model, tmp_path):
    out = tmp_path / "honest.bundle"
    env = {**os.environ, "PYTHONPATH": str(HERE)}
    proc = run_here(
        "compile", gt_model, "-o", out, "--target", "c", "--pipeline", "planted_pipes:honest", cwd=tmp_path, env=env
    )  # found through PYTHONPATH
    assert proc.returncode == 0, proc.stderr
    names = [p["name"] for p in json.loads((out / "manifest.json").read_text())["passes"]]
    assert "my_pipeline" not in names
    for name in ("LegalizeOps", "FuseOps", "FuseTIR", "VMShapeLower", "codegen (c)"):
        assert name in names
    assert "computing lines attributed" in proc.stdout


@pytest.mark.parametrize(
    "spec, message",
    [
        ("nocolon", "--pipeline 'nocolon': expected MODULE:FUNCTION"),
        ("no_such_module:f", "cannot import module 'no_such_module' from the current directory or PYTHONPATH"),
        ("planted_pipes:missing", "module 'planted_pipes'"),
        ("planted_pipes:NOT_CALLABLE", "'NOT_CALLABLE' is a int, not a function of the target"),
        ("planted_pipes:not_a_pass", "not_a_pass(target) returned int, not a tvm.transform.Pass"),
        ("planted_pipes:raises", "raises(target) raised ValueError: no pipeline for you"),
        ("planted_pipes:broken", "TVM failed to compile the model for llvm with --pipeline planted_pipes:broken"),
    ],
)
def test_bad_pipelines_get_one_message(gt_model, tmp_path, spec, message):
    out = tmp_path / "b"
    proc = run_here("compile", gt_model, "-o", out, "--target", "llvm", "--pipeline", spec)
    assert proc.returncode == 2, proc.stderr
    assert message in proc.stderr and "Traceback" not in proc.stderr
    assert not out.exists()


def test_a_pipeline_named_by_its_file_loads_from_any_directory(gt_model, tmp_path):
    """``FILE.py:FUNCTION`` (what the VS Code extension passes: it runs the CLI from a folder
    of its own): the same pipeline as ``MODULE:FUNCTION`` from the current directory; its
    folder's modules import; a missing file or function is one message."""
    out = tmp_path / "byfile.bundle"
    spec = f"{HERE / 'planted_pipes.py'}:with_planted_add"
    proc = run_here("compile", gt_model, "-o", out, "--target", "llvm", "--pipeline", spec, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    names = [p["name"] for p in json.loads((out / "manifest.json").read_text())["passes"]]
    assert "PlantedAddToSubtract" in names
    helper = tmp_path / "helpers"
    helper.mkdir()
    (helper / "pipe_parts.py").write_text("from planted_pipes import with_planted_add as chosen\n")
    (helper / "my_pipe.py").write_text(
        f"import sys\nsys.path.insert(0, {str(HERE)!r})\nfrom pipe_parts import chosen\n"
    )
    out2 = tmp_path / "helper.bundle"
    proc = run_here(
        "compile",
        gt_model,
        "-o",
        out2,
        "--target",
        "llvm",
        "--pipeline",
        f"{helper / 'my_pipe.py'}:chosen",
        cwd=tmp_path,
    )
    assert proc.returncode == 0, proc.stderr
    for bad, message in (
        (f"{tmp_path / 'nope.py'}:f", f"no such file {tmp_path / 'nope.py'}"),
        (f"{HERE / 'planted_pipes.py'}:missing", "has no 'missing'"),
    ):
        proc = run_here("compile", gt_model, "-o", tmp_path / "b", "--target", "llvm", "--pipeline", bad, cwd=tmp_path)
        assert proc.returncode == 2 and message in proc.stderr and "Traceback" not in proc.stderr, proc.stderr


def test_numerics_of_a_custom_pipeline_find_the_layer_its_pass_breaks(gt_model, tmp_path):
    """The planted pass turns the ADD layer's add into subtract: against LiteRT on the same
    model, the unfused variant (same pipeline, fusion left out) shows op 1 first."""
    out = tmp_path / "b"
    proc = run_here(
        "compile",
        gt_model,
        "-o",
        out,
        "--target",
        "llvm",
        "--numerics-unfused",
        "--pipeline",
        "planted_pipes:with_planted_add",
    )
    assert proc.returncode == 0, proc.stderr
    data = json.loads((out / "numerics.json").read_text())
    assert data["first_divergence"] == {"subgraph": 0, "op_index": 1}
    assert not data["layers"][0]["diverges"] and data["layers"][0]["observed_by"] == "unfused"

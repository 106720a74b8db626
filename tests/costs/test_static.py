"""Static costs (always recorded), bad input to --profile, and a damaged costs.json."""

from __future__ import annotations

import json
import re

import numpy as np
import pytest
import tvm
from tests.conftest import MODELS, run_cli

from tvm_explorer.bundle.reader import Bundle
from tvm_explorer.errors import BundleError

from .conftest import save_inputs


def _codegen_entry(bundle: Bundle) -> dict:
    return next(p for p in bundle.manifest["passes"] if p["name"].startswith("codegen (c)"))


@pytest.mark.parametrize("model", ["gt", "mobilenet_v1_fp32.tflite"])
def test_code_lines_add_up_and_workspace_matches_the_c_source(bundles, gt_model, model):
    path = gt_model if model == "gt" else MODELS / model
    bundle = Bundle(bundles.get(path, "c"))
    costs = bundle.costs()
    assert costs["profile"]["status"] == "not_requested" and costs["total_ms"] is None
    assert costs["code_kind"] == "c"
    attributed = _codegen_entry(bundle)["attributed"]
    assert sum(lay["code_lines"] for lay in costs["layers"]) == attributed == costs["totals"]["code_lines"]
    source = bundle.text("code/module.c")
    allocations = [int(n) for n in re.findall(r"TVMBackendAllocWorkspace\([^,]+,[^,]+,\s*\(uint64_t\)(\d+)", source)]
    assert sum(k["workspace_bytes"] for k in costs["kernels"]) == sum(allocations)
    assert costs["totals"]["workspace_bytes"] == sum(allocations)
    kernels = {k["name"]: k for k in costs["kernels"]}
    for lay in costs["layers"]:
        assert lay["workspace_bytes"] == sum(kernels[n]["workspace_bytes"] for n in lay["kernels"])
        assert lay["kernel_count"] == len(lay["kernels"])
    if model != "gt":
        assert sum(allocations) > 0
        # Without a profile the table ranks by code; FLOPs put the convolutions on top.
        by_flops = sorted(costs["layers"], key=lambda lay: -(lay["flops"] or 0))
        assert all(lay["opcode"] in ("CONV_2D", "DEPTHWISE_CONV_2D") for lay in by_flops[:5])
    passes = {p["name"]: p for p in costs["passes"]}
    assert passes["FuseOps"]["ms"] > 0 and passes["FuseOps"]["changed_functions"] > 0
    assert passes["LegalizeOps"]["changed_functions"] > 0
    assert passes["import"]["ms"] is None  # not a pass of TVM's pipeline


@pytest.mark.skipif(tvm.cuda(0).exist, reason="what a machine without a GPU says")
def test_cuda_without_gpu_says_so_in_one_line_and_keeps_static_costs(tmp_path, gt_model):
    out = tmp_path / "gt.cuda.bundle"
    proc = run_cli("compile", gt_model, "-o", out, "--target", "cuda", "--profile")
    assert proc.returncode == 0, proc.stderr
    lines = [ln for ln in proc.stdout.splitlines() if "profile" in ln]
    assert len(lines) == 1, lines
    assert lines[0].startswith(
        "  profile: not measured (no CUDA GPU on this machine: profiling CUDA kernels needs one"
    ), lines
    assert lines[0].endswith("); costs.json has static costs only"), lines
    costs = Bundle(out).costs()
    assert costs["profile"]["status"] == "unavailable" and costs["code_kind"] == "cuda"
    conv = next(lay for lay in costs["layers"] if lay["opcode"] == "CONV_2D")
    assert conv["workspace_bytes"] > 0  # __shared__ tiles of the scheduled convolution
    assert conv["code_lines"] > 0


@pytest.mark.parametrize("case", ["missing", "shape", "dtype"])
def test_inputs_that_do_not_fit_name_the_input_and_write_nothing(tmp_path, gt_model, case):
    arrays = {
        "missing": {"x": np.zeros((1, 8, 8, 3), np.float32)},
        "shape": {"input": np.zeros((1, 8, 8), np.float32)},
        "dtype": {"input": np.zeros((1, 8, 8, 3), np.int32)},
    }[case]
    npz = save_inputs(tmp_path / "in.npz", **arrays)
    out = tmp_path / "b.bundle"
    proc = run_cli("compile", gt_model, "-o", out, "--profile", "--inputs", npz)
    assert proc.returncode == 2
    message = proc.stderr.strip().splitlines()
    assert len(message) == 1 and "Traceback" not in proc.stderr
    assert "input 'input'" in message[0] and "float32 [1, 8, 8, 3]" in message[0], message
    assert not out.exists() and not any(p.name.startswith(".b.bundle") for p in tmp_path.iterdir())


def test_given_inputs_are_used(tmp_path, gt_model):
    npz = save_inputs(tmp_path / "in.npz", input=np.ones((1, 8, 8, 3), np.float32))
    out = tmp_path / "b.bundle"
    run_cli("compile", gt_model, "-o", out, "--profile", "--repeat", "2", "--inputs", npz, check=True)
    profile = Bundle(out).costs()["profile"]
    assert profile["status"] == "measured" and profile["inputs"] == "in.npz" and profile["repeat"] == 2


def test_c_of_a_model_with_odd_names_compiles_and_is_profiled(tmp_path, models_dir):
    """text_lstm's names (`;`, `/`, `:` in its tensor names) once reached TVM's C as written and the
    system C compiler rejected it (the bundle was kept, without a profile). Names are plain
    identifiers before codegen now (frontends/plain_names.py, issue 37): the C builds and runs."""
    out = tmp_path / "lstm.bundle"
    proc = run_cli("compile", models_dir / "text_lstm_fp32.tflite", "-o", out, "--profile", "--repeat", "1")
    assert proc.returncode == 0, proc.stderr
    costs = Bundle(out).costs()
    assert costs["profile"]["status"] == "measured" and costs["total_ms"] is not None
    assert sum(lay["code_lines"] for lay in costs["layers"]) > 0


def test_damaged_costs_file_is_reported_by_the_reader_and_the_cli(tmp_path, bundles, gt_model):
    import shutil

    copy = tmp_path / "copy.bundle"
    shutil.copytree(bundles.get(gt_model, "c"), copy)
    data = json.loads((copy / "costs.json").read_text())
    data["layers"][0]["code_lines"] = "many"
    (copy / "costs.json").write_text(json.dumps(data))
    with pytest.raises(BundleError, match=r"costs.json: layer entry 0: 'code_lines' must be an integer"):
        Bundle(copy).costs()
    proc = run_cli("costs", copy)
    assert proc.returncode == 2 and "layer entry 0: 'code_lines'" in proc.stderr and "Traceback" not in proc.stderr
    (copy / "costs.json").write_text("{not json")
    assert "not readable JSON" in run_cli("costs", copy).stderr
    # The rest of the bundle still loads (the server lists it with a problem).
    assert Bundle(copy).preload() and Bundle(copy).layers


def test_llvm_counts_the_kernels_compute_functions_like_the_c(bundles, models_dir):
    model = models_dir / "small_cnn_fp32.tflite"
    c = {k["name"]: k for k in Bundle(bundles.get(model, "c")).costs()["kernels"]}
    ll_costs = Bundle(bundles.get(model, "llvm")).costs()
    ll = {k["name"]: k for k in ll_costs["kernels"]}
    assert ll_costs["code_kind"] == "ll" and set(ll) == set(c)
    assert any(k["workspace_bytes"] for k in c.values())
    for name in c:  # the same allocations, seen in C and in LLVM IR
        assert ll[name]["workspace_bytes"] == c[name]["workspace_bytes"], name
    assert sum(lay["code_lines"] for lay in ll_costs["layers"]) == ll_costs["totals"]["code_lines"] > 0


def test_an_inputs_file_that_is_no_npz_says_so(tmp_path, gt_model):
    bad = tmp_path / "in.npz"
    bad.write_text("not arrays")
    proc = run_cli("compile", gt_model, "-o", tmp_path / "b.bundle", "--profile", "--inputs", bad)
    assert proc.returncode == 2 and proc.stderr.strip() == (
        f"tvm-explorer: error: {bad}: not a readable .npz file (arrays saved with numpy.savez)"
    )
    assert not (tmp_path / "b.bundle").exists()

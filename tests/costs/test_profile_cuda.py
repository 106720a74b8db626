"""Measured run time per layer on CUDA (``compile --target cuda --profile``).

The kernels are timed with TVM's device timer (CUDA events) in a fresh process. The GPU tests
skip only where there is no GPU; the same timing path (``ProfileRequest(timer="device")``:
export, a fresh process, ``time_evaluator`` per kernel call with the VM's own call skipped) is
exercised on the CPU everywhere, and both go through the join and aggregation the CPU targets
use.
"""

from __future__ import annotations

import json

import pytest
import tvm
from tests.conftest import run_cli
from tests.costs.conftest import check_times, gpu_dominant_dense

from tvm_explorer.app.compile import compile_model
from tvm_explorer.bundle.reader import Bundle
from tvm_explorer.costs.request import ProfileRequest

needs_gpu = pytest.mark.skipif(not tvm.cuda(0).exist, reason="needs a CUDA GPU (none on this machine)")


def test_device_timer_path_on_the_cpu(tmp_path, dense_model):
    result = compile_model(
        dense_model, tmp_path / "dense.bundle", "llvm", profile=ProfileRequest(repeat=3, timer="device")
    )
    costs = Bundle(result.bundle).costs()
    assert costs["profile"]["clock"] == "device_timer" and costs["profile"]["device"] == "cpu"
    assert costs["profile"]["repeat"] == 3
    # Wall time on a shared machine: the plain runs are compared on a GPU only (below).
    check_times(costs, plain_factor=None)
    # Kernels timed by the device timer, builtins on the host: both are in the calls.
    builtins = [c for c in costs["calls"] if c["builtin"]]
    assert all(c["median_ms"] is not None for c in costs["calls"])
    assert any(c["kernel"].startswith("fused_") for c in costs["calls"]) and not any(
        c["layers"] for c in builtins if c["kernel"].startswith("vm.builtin.alloc")
    )
    assert "Measured: " in run_cli("costs", result.bundle, check=True).stdout
    assert "(wall time (device timer), median of 3 runs" in run_cli("costs", result.bundle).stdout
    # Issue 43: every call of a kernel computing layers ran inside an NVTX range named after
    # them (a warm-up run with the instrument, then the timed runs).
    nvtx = costs["profile"]["nvtx"]
    assert nvtx["domain"] == "tvm-explorer" and nvtx["library"] == "nvtx 0.2.17", nvtx
    per_run = [c for c in costs["calls"] if not c["builtin"] and c["layers"]]
    assert nvtx["kernels"] >= 1 and nvtx["ranges"] == (3 + 1) * len(per_run), (nvtx, per_run)


def test_nvtx_range_names_are_the_layers_of_each_kernel(dense_model):
    from tvm_explorer.costs.nvtx_ranges import MAX_LABEL, layer_labels
    from tvm_explorer.frontends import load_any

    layers = load_any(dense_model).layers
    labels = layer_labels(
        {"fused_dense_add": [layers[0].id], "nothing": [], "many": [lay.id for lay in layers] * 40}, layers
    )
    assert labels["fused_dense_add"] == f"{layers[0].label} {layers[0].name}"
    assert "nothing" not in labels and len(labels["many"]) <= MAX_LABEL


@pytest.mark.skipif(tvm.cuda(0).exist, reason="checks the message of a machine without a GPU")
def test_profiling_process_without_the_device_says_so(gt_model):
    # The fresh profiling process finds no CUDA device: its reason comes back as one line.
    import numpy as np

    from tvm_explorer.costs.profile import ProfileFailed, measure_on_device

    result = compile_model(gt_model, None, "llvm")
    with pytest.raises(ProfileFailed, match=r"^no cuda device is visible to the profiling process$"):
        measure_on_device(result.executable, "cuda", [np.zeros((1, 8, 8, 3), np.float32)], 1)


def test_profiling_process_imports_nothing_from_the_working_directory(gt_model, tmp_path, monkeypatch):
    # Issue 26: `python -m` put the cwd first on sys.path; a compile --profile run in a folder
    # holding a tvm_explorer/ (or tvm/, numpy/) ran it in the profiling process.
    import numpy as np
    from tests.lsp.hostile import plant_package

    from tvm_explorer.costs.profile import measure_on_device

    result = compile_model(gt_model, None, "llvm")
    marker = tmp_path / "PLANTED-CODE-RAN"
    for name in ("tvm_explorer", "tvm", "numpy"):
        plant_package(tmp_path / "ws", marker, name)
    monkeypatch.chdir(tmp_path / "ws")
    monkeypatch.delenv("PYTHONSAFEPATH", raising=False)
    measured = measure_on_device(result.executable, "cpu", [np.zeros((1, 8, 8, 3), np.float32)], 1)
    assert measured is not None and not marker.exists()


@needs_gpu
def test_cuda_profile_ranks_the_dominant_layer_and_adds_up(tmp_path):
    model = gpu_dominant_dense(tmp_path / "gpu_dense.tflite")
    out = tmp_path / "gpu_dense.cuda.bundle"
    proc = run_cli("compile", model, "-o", out, "--target", "cuda", "--profile", "--repeat", 10)
    assert proc.returncode == 0, proc.stderr
    assert "slowest layer: op 0 FULLY_CONNECTED big_dense/output" in proc.stdout, proc.stdout
    costs = json.loads(run_cli("costs", out, "--json", check=True).stdout)
    full = Bundle(out).costs()
    assert full["profile"]["clock"] == "device_timer" and full["profile"]["device"] == "cuda"
    assert full["profile"]["device_name"]
    check_times(full)
    assert costs["layers"][0]["opcode"] == "FULLY_CONNECTED"
    table = run_cli("costs", out, check=True).stdout
    assert f"(GPU time (CUDA events) on {full['profile']['device_name']}, median of 10 runs" in table


@needs_gpu
def test_cuda_profile_top_layer_is_stable_across_two_compiles(tmp_path):
    model = gpu_dominant_dense(tmp_path / "gpu_dense.tflite")
    tops = []
    for run in range(2):
        out = tmp_path / f"run{run}.bundle"
        run_cli("compile", model, "-o", out, "--target", "cuda", "--profile", "--repeat", 5, check=True)
        tops.append(json.loads(run_cli("costs", out, "--json", check=True).stdout)["layers"][0]["op_index"])
    assert tops == [0, 0]

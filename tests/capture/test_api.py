"""The Python API records a compile that the user's own script runs."""

import pytest
import tvm

from tvm_explorer import Capture
from tvm_explorer.bundle.reader import Bundle


def test_capture_context_manager_records_users_compile(gt_model, tmp_path):
    out = tmp_path / "mine.bundle"
    with Capture(gt_model, out) as cap:
        ex = tvm.compile(cap.module, tvm.target.Target("c"), relax_pipeline=cap.pipeline("c"))
        cap.add_executable(ex)
    b = Bundle(out)
    names = [p["name"] for p in b.manifest["passes"]]
    assert names[0] == "import" and "FuseOps" in names and "codegen (c)" in names
    assert all(p["attributed"] == p["units"] for p in b.manifest["passes"])
    assert b.document("code/module.c") is not None


def test_capture_writes_nothing_when_the_block_fails(gt_model, tmp_path):
    out = tmp_path / "failed.bundle"
    try:
        with Capture(gt_model, out) as cap:
            assert cap.module is not None
            raise RuntimeError("user code failed")
    except RuntimeError:
        pass
    assert list(tmp_path.iterdir()) == []


def _costs_json(bundle) -> dict:
    import json

    from conftest import run_cli

    return json.loads(run_cli("costs", bundle, "--json", check=True).stdout)


def test_capture_writes_costs_json_like_the_cli(gt_model, tmp_path):
    out = tmp_path / "costs.bundle"
    with Capture(gt_model, out) as cap:
        ex = tvm.compile(cap.module, cap.target_for("c"), relax_pipeline=cap.pipeline("c"))
        cap.add_executable(ex)
    costs = Bundle(out).costs()  # validated by the reader
    assert costs is not None and cap.costs == costs
    assert costs["profile"]["status"] == "not_requested" and costs["total_ms"] is None
    conv = next(lay for lay in costs["layers"] if lay["opcode"] == "CONV_2D")
    assert conv["code_lines"] > 0 and conv["kernels"] and conv["flops"] > 0
    # Per-layer code lines add up to the attributed computing lines of the generated C.
    codegen = next(p for p in Bundle(out).manifest["passes"] if p["name"] == "codegen (c)")
    assert sum(lay["code_lines"] for lay in costs["layers"]) == codegen["attributed"]
    passes = {p["name"]: p for p in costs["passes"]}
    assert passes["FuseOps"]["ms"] > 0 and passes["FuseOps"]["changed_functions"] > 0
    printed = _costs_json(out)
    assert {(lay["op_index"], lay["opcode"]) for lay in printed["layers"]} == {
        (lay["op_index"], lay["opcode"]) for lay in costs["layers"]
    }


def test_capture_with_profile_measures_run_time(tmp_path):
    from costs.conftest import check_times, dominant_dense

    model = dominant_dense(tmp_path / "dense.tflite")
    out = tmp_path / "profiled.bundle"
    with Capture(model, out, profile=3) as cap:
        cap.add_executable(tvm.compile(cap.module, cap.target_for("llvm"), relax_pipeline=cap.pipeline("llvm")))
    printed = _costs_json(out)
    assert printed["total_ms"] > 0 and printed["layers"][0]["opcode"] == "FULLY_CONNECTED"
    costs = Bundle(out).costs()
    assert costs["profile"]["repeat"] == 3 and costs["profile"]["clock"] == "process_cpu"
    check_times(costs)


def test_capture_profile_without_an_executable_keeps_static_costs(gt_model, tmp_path):
    out = tmp_path / "noexe.bundle"
    with Capture(gt_model, out, profile=True) as cap:
        tvm.compile(cap.module, cap.target_for("c"), relax_pipeline=cap.pipeline("c"))
    prof = Bundle(out).costs()["profile"]
    assert prof["status"] == "failed" and "add_executable" in prof["reason"]


def test_capture_from_onnx_writes_costs(tmp_path):
    from frontends.onnx_graphs import conv_block

    proto = conv_block(tmp_path / "block.onnx")
    with Capture.from_onnx(proto, tmp_path / "block.bundle", profile=2) as cap:
        cap.add_executable(tvm.compile(cap.module, cap.target_for("llvm"), relax_pipeline=cap.pipeline("llvm")))
    costs = _costs_json(cap.bundle)
    assert costs["total_ms"] > 0 and len(costs["layers"]) == len(Bundle(cap.bundle).layers)
    assert sum(lay["time_ms"] for lay in costs["layers"]) <= costs["total_ms"] * 1.1


def test_capture_bad_profile_request_writes_nothing(gt_model, tmp_path):
    from tvm_explorer.costs.request import ProfileRequest
    from tvm_explorer.errors import ExplorerError

    with pytest.raises(ExplorerError, match="needs at least 1 run"):
        Capture(gt_model, tmp_path / "bad.bundle", profile=ProfileRequest(repeat=0))
    with pytest.raises(TypeError, match="profile='yes'"):
        Capture(gt_model, tmp_path / "bad.bundle", profile="yes")
    assert list(tmp_path.iterdir()) == []


def test_capture_from_torch_writes_a_profiled_costs_json(tmp_path):
    import torch

    from frontends import torch_nets

    torch.manual_seed(0)
    with Capture.from_torch(
        torch_nets.Block(4).eval(), (torch.randn(1, 4, 6, 6),), tmp_path / "block.bundle", profile=2
    ) as cap:
        cap.add_executable(tvm.compile(cap.module, cap.target_for("llvm"), relax_pipeline=cap.pipeline("llvm")))
    printed = _costs_json(cap.bundle)
    assert printed["total_ms"] > 0 and cap.costs["profile"]["status"] == "measured"
    assert len(printed["layers"]) == len(Bundle(cap.bundle).layers) == 4

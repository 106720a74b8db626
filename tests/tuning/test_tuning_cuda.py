"""``compile --target cuda --tune`` (docs/tuning.md, "cuda"): MetaSchedule's CUDA design space,
each candidate timed on a GPU. Without one here (and no tracker's device), tuning is refused
before anything is compiled. The real tuning run needs a GPU: it skips where there is none,
unless ``TVM_EXPLORER_GPU=1`` says one must be there (scripts/gpu-check.sh), where it fails.
The path through a tracker's device that cannot run CUDA is tests/remote/test_tuning_remote.py."""

from __future__ import annotations

import json
import os

import pytest
import tvm
from tests.tuning.mlp import compile_tuned, write_mlp

GPU = bool(tvm.cuda(0).exist)
needs_gpu = pytest.mark.skipif(
    not GPU and not os.environ.get("TVM_EXPLORER_GPU"), reason="needs a CUDA GPU (none on this machine)"
)


def _ledger(bundle) -> dict:
    return json.loads((bundle / "tuning.json").read_text())


@pytest.mark.skipif(GPU, reason="a CUDA GPU is here: tuning for cuda is not refused")
def test_tuning_cuda_without_a_gpu_is_refused_before_compiling(tmp_path):
    model = write_mlp(tmp_path / "mlp.onnx")
    proc = compile_tuned(model, tmp_path / "x.bundle", 2, target="cuda", check=False)
    assert proc.returncode != 0 and "Traceback" not in proc.stderr
    assert proc.stderr.count("\n") == 1, proc.stderr
    assert "--tune for cuda times each candidate on a GPU: none here (" in proc.stderr, proc.stderr
    assert "--rpc-tracker HOST:PORT --rpc-key KEY" in proc.stderr and "--tune 0" in proc.stderr
    assert not (tmp_path / "x.bundle").exists() and not (tmp_path / "tuning-db").exists()


@needs_gpu
def test_cuda_tuning_on_this_gpu_then_the_database_applied(tmp_path):
    """4 candidates of one kernel timed on this GPU (LocalRunner), the best applied, the
    ledger's default (dlight's schedule) and tuned times measured on the GPU; then the same
    database applied with --tune 0: reused, not re-tuned, times measured again."""
    model = write_mlp(tmp_path / "mlp.onnx")
    db = tmp_path / "db"
    out = tmp_path / "tuned.bundle"
    compile_tuned(model, out, 4, "--tune-only", "fc1", "--tuning-db", db, target="cuda")
    ledger = _ledger(out)
    kernels = {k["kernel"]: k for k in ledger["kernels"]}
    fc1 = kernels["fused_matmul_relu"]
    assert fc1["state"] == "tuned" and fc1["trials"] == 4 and fc1["best_measured_us"] > 0, fc1
    assert fc1["default_us"] > 0 and fc1["tuned_us"] > 0 and fc1["speedup"] > 0, fc1
    assert ledger["timed_with"].startswith("cuda: ") and "times_not_measured" not in ledger, ledger
    assert ledger["candidates_ran_on"] == "this machine (MetaSchedule's LocalRunner)"
    assert kernels["matmul1"]["state"] == "untuned" and kernels["matmul1"]["default_us"] > 0
    trace = (out / fc1["trace"]).read_text()
    assert "MetaSchedule tuned PrimFunc fused_matmul_relu" in trace and "threadIdx" in trace
    manifest = json.loads((out / "manifest.json").read_text())
    rules = {t["primfunc"]: t for t in manifest["traces"]}
    assert rules["fused_matmul_relu"]["rule"] == "MetaSchedule" and rules["fused_matmul_relu"]["loops"]
    assert rules["matmul1"]["rule"] != "MetaSchedule"  # dlight's default schedule, recorded as on any cuda compile

    again = tmp_path / "applied.bundle"
    proc = compile_tuned(model, again, 0, "--tuning-db", db, target="cuda")
    fc1 = {k["kernel"]: k for k in _ledger(again)["kernels"]}["fused_matmul_relu"]
    assert fc1["state"] == "tuned" and fc1["reused"] and fc1["trials"] == 0, fc1
    assert fc1["default_us"] > 0 and fc1["tuned_us"] > 0, fc1
    assert "fused_matmul_relu_kernel" in (again / "code" / "device.cu").read_text()
    assert "computing lines attributed" in proc.stdout

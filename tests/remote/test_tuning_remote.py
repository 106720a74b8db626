"""``compile --tune`` through TVM's RPC (docs/tuning.md, "On devices"): MetaSchedule's RPCRunner
runs the candidates on the devices of the ``pool`` fixture's tracker, and the ledger times the
kernels on one of them. Short on purpose: 2 trials of one layer of the tests' tiny MLP."""

from __future__ import annotations

import json
import re
import time

import pytest
import tvm
from tests.conftest import run_cli
from tests.tuning.mlp import compile_tuned, write_mlp

from tvm_explorer.bundle.sections.tuning import layer_states

from .conftest import KEY


@pytest.fixture(scope="module")
def tuned_remote(pool, tmp_path_factory):
    root = tmp_path_factory.mktemp("tuning-remote")
    model = write_mlp(root / "mlp.onnx")
    out = root / "mlp.bundle"
    proc = compile_tuned(
        model,
        out,
        2,
        "--tune-only",
        "fc1",
        "--tuning-db",
        root / "db",
        "--rpc-tracker",
        pool.tracker_address,
        "--rpc-key",
        KEY,
    )
    return out, proc.stdout


def test_candidates_run_and_kernels_are_timed_on_the_trackers_devices(tuned_remote, pool):
    bundle, stdout = tuned_remote
    ledger = json.loads((bundle / "tuning.json").read_text())
    where = f"key {KEY!r} at the tracker {pool.tracker_address}"
    assert ledger["candidates_ran_on"] == f"{where} (MetaSchedule's RPCRunner)"
    # a device the tracker handed out, named with what it reported about itself
    assert ledger["timed_with"].startswith("device 127.0.0.1:") and f"(key {KEY!r})" in ledger["timed_with"]
    by_name = {k["kernel"]: k for k in ledger["kernels"]}
    fc1 = by_name["fused_matmul_relu"]
    # the candidates ran there: measured times came back, and the best one was applied
    assert fc1["state"] == "tuned" and fc1["trials"] == 2 and fc1["best_measured_us"] > 0, fc1
    assert fc1["default_us"] > 0 and fc1["tuned_us"] > 0, fc1
    assert by_name["matmul1"]["state"] == "untuned" and by_name["matmul1"]["default_us"] > 0
    shown = run_cli("tuning", bundle, check=True).stdout
    assert f"times: {ledger['timed_with']}" in shown and f"candidates measured on {where}" in shown


def test_a_single_rpc_server_is_refused_in_one_message(pool, tmp_path):
    model = write_mlp(tmp_path / "mlp.onnx")
    proc = compile_tuned(model, tmp_path / "x.bundle", 2, "--rpc", pool.direct_address, check=False)
    assert proc.returncode != 0 and "Traceback" not in proc.stderr
    assert proc.stderr.count("\n") == 1 and "cannot use a single server" in proc.stderr, proc.stderr
    assert "--rpc-tracker HOST:PORT --rpc-key KEY" in proc.stderr and not (tmp_path / "x.bundle").exists()


def test_cuda_candidates_built_here_fail_to_run_on_a_device_without_a_gpu(pool, tmp_path):
    """--target cuda through the tracker's key, whose devices are CPU-only RPC servers: each
    candidate is built for CUDA here by MetaSchedule's builder, sent to a device, and refused
    there. The ledger keeps the device's own error and says tuning did nothing; the database
    MetaSchedule wrote, applied with --tune 0 (no GPU here), matches nothing it could apply,
    and no time is made up."""
    model = write_mlp(tmp_path / "mlp.onnx")
    db, out = tmp_path / "db", tmp_path / "cuda.bundle"
    started = time.monotonic()
    proc = compile_tuned(
        model, out, 2, "--tune-only", "fc1", "--tuning-db", db,
        "--rpc-tracker", pool.tracker_address, "--rpc-key", KEY, target="cuda",
    )  # fmt: skip
    print(f"cuda tuning through the tracker: {time.monotonic() - started:.0f} s")
    ledger = json.loads((out / "tuning.json").read_text())
    fc1 = {k["kernel"]: k for k in ledger["kernels"]}["fused_matmul_relu"]
    assert (fc1["trials"], fc1["build_failures"], fc1["run_failures"]) == (2, 0, 2), fc1
    assert fc1["state"] == "build_failed" and "2 to run on the device" in fc1["reason"]
    said = "a loader of that name is not registered. Make sure to have runtime that registers ffi.Module.load_from_bytes.cuda"
    assert fc1["errors"][0].startswith("run: ") and said in fc1["errors"][0], fc1["errors"]
    assert fc1["tuned_us"] is None and fc1["best_measured_us"] is None
    verdict = ledger["verdict"]
    assert verdict["level"] == "error" and verdict["message"].startswith("tuning did nothing: every candidate"), verdict
    assert said in verdict["message"] and "the device cannot run CUDA" in verdict["message"]
    assert f"key {KEY!r} at the tracker {pool.tracker_address}" in ledger["candidates_ran_on"]
    assert "tuning ERROR: tuning did nothing" in proc.stdout
    shown = run_cli("tuning", out)
    assert shown.returncode == 1 and "TUNING FAILED: tuning did nothing" in shown.stdout
    assert "RUN FAILED" in shown.stdout and "the builder and the device said:" in shown.stdout
    # Told apart from a build that failed wherever a layer's state is said in words.
    fc1_layers = fc1["layers"]
    assert fc1_layers and all(layer_states(ledger)[lid] == ("run failed", None) for lid in fc1_layers)
    assert "1 run failed" in proc.stdout, proc.stdout
    if tvm.cuda(0).exist:
        return  # the rest is the apply path without a GPU

    applied = tmp_path / "applied.bundle"
    proc = compile_tuned(model, applied, 0, "--tuning-db", db, target="cuda")
    assert re.search(r"generated cuda: (\d+)/\1 computing lines attributed", proc.stdout), proc.stdout
    ledger = json.loads((applied / "tuning.json").read_text())
    assert ledger["times_not_measured"].startswith("no CUDA GPU on this machine")
    assert ledger["timed_with"] == f"not measured: {ledger['times_not_measured']}"
    assert ledger["candidates_ran_on"].startswith("nowhere: no candidate was measured")
    assert all(k["default_us"] is None and k["tuned_us"] is None for k in ledger["kernels"]), ledger
    fc1 = {k["kernel"]: k for k in ledger["kernels"]}["fused_matmul_relu"]
    assert fc1["state"] == "miss" and "holds no candidate that built and ran" in fc1["reason"], fc1
    assert "holds no candidate of theirs that ran" in ledger["verdict"]["message"], ledger["verdict"]
    shown = run_cli("tuning", applied).stdout
    assert "times: not measured: no CUDA GPU" in shown and "Time left on the table: unknown" in shown
    assert "candidates measured nowhere: no candidate was measured in this compile" in shown

"""``compile --tune``: MetaSchedule after FuseTIR, the tuning ledger and ``tvm-explorer tuning``
(docs/tuning.md). Cheap on purpose: the tuned bundle applies tests/models/tuning-db-mlp/ (built
once by scripts/make_tuning_db.py with compile --tune itself) and is shared; MetaSchedule tunes
for real once, one kernel whose candidates all fail to build (the builder's own error kept)."""

from __future__ import annotations

import json
import re
import shutil

import pytest
from tests.conftest import run_cli
from tests.tuning.mlp import compile_tuned, write_mlp

from .conftest import DB_FILES


def _ledger(bundle) -> dict:
    return json.loads((bundle / "tuning.json").read_text())


def test_a_database_that_knows_every_kernel_is_applied_not_retuned(tuned):
    ledger = _ledger(tuned.bundle)
    assert sorted(k["kernel"] for k in ledger["kernels"]) == ["fused_matmul_relu", "matmul1"]
    for k in ledger["kernels"]:
        assert (k["state"], k["reused"], k["trials"]) == ("tuned", True, 0), k
        # timed side by side in this compile, on the same inputs
        assert k["default_us"] > 0 and k["tuned_us"] > 0 and k["speedup"] > 0, k
        trace = (tuned.bundle / k["trace"]).read_text()
        assert trace.startswith(f"# MetaSchedule tuned PrimFunc {k['kernel']}") and "def apply_trace" in trace
    assert ledger["verdict"]["level"] == "ok" and ledger["tuning_seconds"] == 0
    assert {name: (tuned.db / name).read_bytes() for name in DB_FILES} == tuned.before
    assert "tuning: 2 tuned" in tuned.stdout


def test_tuned_kernels_keep_their_provenance(tuned):
    passes = json.loads(run_cli("coverage", tuned.bundle, "--json", check=True).stdout)["passes"]
    names = [p["name"] for p in passes]
    # tuned after FuseOps/FuseTIR, on the fused PrimFuncs
    assert names.index("FuseTIR") < names.index("MetaScheduleTune") < names.index("MetaScheduleApplyDatabase")
    for p in passes:
        assert p["attributed"] == p["units"], p
        if p["stage"] == "relax":
            assert p["tir_attributed"] == p["tir_units"], p
    applied = next(p for p in passes if p["name"] == "MetaScheduleApplyDatabase")
    assert applied["changed"] and applied["tir_units"] > 0
    document = tuned.bundle / "relax" / f"{applied['index']:03d}-MetaScheduleApplyDatabase.relax"
    assert '"tirx.is_scheduled": True' in document.read_text()


def test_tuning_command_names_layers(tuned):
    proc = run_cli("tuning", tuned.bundle)
    assert proc.returncode == 0, proc.stderr
    row = next(line for line in proc.stdout.splitlines() if line.startswith("fused_matmul_relu"))
    assert "tuned (reused)" in row and "MatMul fc1" in row and "Relu relu1" in row
    data = json.loads(run_cli("tuning", tuned.bundle, "--json", check=True).stdout)
    by_name = {k["kernel"]: k for k in data["kernels"]}
    assert by_name["matmul1"]["layer_names"] == ["MatMul fc2"]


def test_a_database_built_for_another_shape_is_a_loud_miss(missed):
    out = missed.bundle
    assert "tuning ERROR" in missed.stdout and "matched none" in missed.stdout
    for k in _ledger(out)["kernels"]:
        assert k["state"] == "miss" and "another shape" in k["reason"], k
    shown = run_cli("tuning", out)
    assert shown.returncode == 1
    assert shown.stdout.startswith("TUNING FAILED: the database") and "another shape" in shown.stdout
    assert "DATABASE MISS" in shown.stdout


def test_builder_failures_keep_the_builders_own_error(tmp_path):
    """A real MetaSchedule run (one kernel, one candidate) whose builder times out: no build
    finishes in a millisecond (the worker's start-up is not counted)."""
    model = write_mlp(tmp_path / "mlp.onnx")
    out, db = tmp_path / "mlp.bundle", tmp_path / "db"
    proc = compile_tuned(
        model, out, 1, "--tune-only", "fc2", "--tuning-db", db, "--tune-builder-timeout", "0.001", "--progress", "json"
    )
    tune_events = [json.loads(line) for line in proc.stdout.splitlines() if '"stage": "tune"' in line]
    assert any(e["name"].startswith("tuning matmul1: 1 trials") for e in tune_events), tune_events
    kernels = {k["kernel"]: k for k in _ledger(out)["kernels"]}
    failed = kernels["matmul1"]
    assert (failed["state"], failed["trials"], failed["build_failures"]) == ("build_failed", 1, 1)
    assert any("LocalBuilder: Timeout" in e for e in failed["errors"]), failed
    assert kernels["fused_matmul_relu"]["state"] == "untuned"
    assert "--tune-only" in kernels["fused_matmul_relu"]["reason"]
    shown = run_cli("tuning", out)
    assert shown.returncode == 1 and "builder timed out" in shown.stdout and "LocalBuilder: Timeout" in shown.stdout
    assert (db / "database_workload.json").is_file()


def test_c_is_tuned_without_vectorization_and_built_as_c(tmp_path):
    """--target c: MetaSchedule tunes (2 trials, one layer) in a space without vectorization,
    each candidate built as C by the system compiler; the tuned schedule is in the C."""
    model = write_mlp(tmp_path / "mlp.onnx")
    out = tmp_path / "mlpc.bundle"
    compile_tuned(model, out, 2, "--tune-only", "fc1", "--tuning-db", tmp_path / "db", target="c")
    kernels = {k["kernel"]: k for k in _ledger(out)["kernels"]}
    fc1 = kernels["fused_matmul_relu"]
    assert (fc1["state"], fc1["trials"], fc1["build_failures"], fc1["run_failures"]) == ("tuned", 2, 0, 0), fc1
    assert fc1["best_measured_us"] > 0 and fc1["default_us"] > 0 and fc1["tuned_us"] > 0
    trace = (out / fc1["trace"]).read_text()
    assert "sch.split(" in trace and "vectorize" not in trace
    source = (out / "code" / "module.c").read_text()
    assert "__tvm_ffi_fused_matmul_relu" in source and "float32x" not in source
    assert _ledger(out)["target"] == "c" and kernels["matmul1"]["state"] == "untuned"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--target", "llvm", "--tuning-db", "x"], "--tuning-db and --tune-only need --tune"),
        (["--target", "llvm", "--tune", "-1"], "--tune -1"),
        (["--target", "llvm", "--tune", "0", "--tune-only", "nosuch"], "no layer named 'nosuch'"),
    ],
)
def test_bad_tuning_requests_are_one_message(tuned, tmp_path, args, message):
    proc = run_cli("compile", tuned.model, *args, "-o", tmp_path / "b")
    assert proc.returncode != 0 and message in proc.stderr, proc.stderr
    assert "Traceback" not in proc.stderr and not (tmp_path / "b").exists()


def test_a_tuned_loop_hovers_with_the_trace_step_that_made_it(tuned):
    """Every loop of a tuned kernel links to the MetaSchedule trace step that created it, from
    the IR MetaScheduleApplyDatabase printed on (as dlight's schedules do on CUDA)."""

    from tvm_explorer.bundle.reader import Bundle
    from tvm_explorer.navigation.hover import hover
    from tvm_explorer.navigation.view import BundleView

    bundle = Bundle(tuned.bundle)
    view = BundleView(bundle)
    applied = next(p for p in bundle.manifest["passes"] if p["name"] == "MetaScheduleApplyDatabase")
    text = (tuned.bundle / applied["after"]).read_text()
    steps, measured = [], set()
    ledger = {k["kernel"]: k for k in json.loads((tuned.bundle / "tuning.json").read_text())["kernels"]}
    for loop in re.finditer(r"for (\w+)", text):
        value, _ = hover(view, applied["after"], loop.start(1))
        # and what tuning measured for its kernel, beside the default schedule
        for name, tuned_us in re.findall(
            r"Tuning ledger: (\w+) tuned \(reused\): (\d+\.\d\d) µs, default", value.replace("\\", "")
        ):
            assert tuned_us == f"{ledger[name]['tuned_us']:.2f}", value
            measured.add(name)
        steps += re.findall(
            r"Loop created by schedule step (\d+) of `(\w+)` in `(traces/\w+\.py)`, "
            r"tuned by MetaSchedule: `(.*)`",
            value,
        )
    assert {kernel for _, kernel, _, _ in steps} == {"fused_matmul_relu", "matmul1"}, steps
    assert measured == set(ledger), measured
    for _, _, path, text_of_step in steps:
        assert text_of_step.replace("\\", "") in (tuned.bundle / path).read_text()


def test_costs_and_the_graph_show_what_tuning_did_per_layer(tuned):
    from tvm_explorer.bundle.reader import Bundle
    from tvm_explorer.graphview.document import graph_document
    from tvm_explorer.navigation.view import BundleView

    table = run_cli("costs", tuned.bundle, check=True).stdout
    assert "tuning" in next(line for line in table.splitlines() if "layer" in line and "kernels" in line)
    row = next(line for line in table.splitlines() if "MatMul fc2" in line)
    assert re.search(r"tuned \d+\.\d\dx\s+matmul1", row), row
    data = json.loads(run_cli("costs", tuned.bundle, "--json", check=True).stdout)
    assert set(data["tuning"]) == {"0", "1", "2"}
    graph = graph_document(BundleView(Bundle(tuned.bundle)), places=False)
    overlay = next(o for o in graph["overlays"] if o["id"] == "tuning")
    assert overlay["available"] and overlay["scale"] == "category"
    # Each layer: tuned, told apart when its kernel was measured slower than the default
    # schedule (a tuned tiny matmul's thread pool can cost more than its work), and its panel
    # line naming the kernel with both times.
    ledger = json.loads((tuned.bundle / "tuning.json").read_text())
    for node in graph["nodes"]:
        (kernel,) = [k for k in ledger["kernels"] if int(node["id"]) in k["layers"]]
        slower = kernel["speedup"] is not None and kernel["speedup"] < 1
        assert node["metrics"]["tuning"] == ("tuned, slower than default" if slower else "tuned"), (node, kernel)
        assert node["tuning"].startswith(f"{kernel['kernel']} tuned (reused): {kernel['tuned_us']:.2f} µs, default")
        assert f"({kernel['speedup']:.2f}×, measured side by side)" in node["tuning"]
    assert {k["schedule"] for k in graph["kernels"].values()} == {"MetaSchedule (tuned)"}


def test_an_untuned_bundle_says_how_to_tune(bundles, gt_model):
    from tvm_explorer.bundle.reader import Bundle
    from tvm_explorer.graphview.document import graph_document
    from tvm_explorer.navigation.view import BundleView

    out = bundles.get(gt_model, "c")
    overlay = next(o for o in graph_document(BundleView(Bundle(out)), places=False)["overlays"] if o["id"] == "tuning")
    assert not overlay["available"] and "--tune" in overlay["note"]
    proc = run_cli("tuning", out)
    assert proc.returncode == 2 and "compiled without --tune" in proc.stderr


def test_a_damaged_ledger_is_one_message_naming_the_file(tuned, tmp_path):
    copy = tmp_path / "copy.bundle"
    shutil.copytree(tuned.bundle, copy)
    ledger = _ledger(copy)
    ledger["kernels"][0]["state"] = "great"
    (copy / "tuning.json").write_text(json.dumps(ledger))
    proc = run_cli("tuning", copy)
    assert proc.returncode == 2 and str(copy / "tuning.json") in proc.stderr and "'state'" in proc.stderr
    assert "Traceback" not in proc.stderr
    costs = run_cli("costs", copy)  # the ledger is optional: the costs still print
    assert costs.returncode == 0 and "the tuning column is left out" in costs.stderr and "MatMul fc2" in costs.stdout

"""``compare`` of a tuned and a database-miss bundle per layer, and the ``--fail-on tuning``
gate rule (docs/compare.md, docs/tuning.md). The shared tuned and missed MLP bundles."""

from __future__ import annotations

import json
import shutil

from tests.conftest import run_cli

EXIT_REGRESSION = 6


def test_compare_shows_each_layers_tuning_and_time_on_both_sides(tuned, missed):
    data = json.loads(run_cli("compare", tuned.bundle, missed.bundle, "--json", check=True).stdout)
    assert data["tuning_compared"] is True
    ledger_a = json.loads((tuned.bundle / "tuning.json").read_text())
    by_layer = {lid: k for k in ledger_a["kernels"] for lid in k["layers"]}
    fc2 = next(r for r in data["layers"] if r["name"] == "fc2")
    t = fc2["tuning"]
    assert t["a"]["state"] == "tuned" and t["b"]["state"] == "database miss"
    assert t["a"]["us"] == by_layer[fc2["op_index"]]["tuned_us"] and t["b"]["us"] > 0
    assert t["time_ratio"] == round(t["b"]["us"] / t["a"]["us"], 4)
    text = run_cli("compare", tuned.bundle, missed.bundle, check=True).stdout
    row = next(line for line in text.splitlines() if " fc2 " in line and "lost its tuned schedule" in line)
    assert "tuned" in row and "database miss" in row


def test_fail_on_tuning_names_each_layer_that_lost_its_tuned_schedule(tuned, missed):
    proc = run_cli("compare", tuned.bundle, missed.bundle, "--fail-on", "tuning")
    assert proc.returncode == EXIT_REGRESSION, proc.stderr
    lost = [line for line in proc.stdout.splitlines() if line.startswith("  REGRESSION")]
    assert {line.split(":")[0].split()[-1] for line in lost} == {"fc1", "relu1", "fc2"}
    assert all("tuned" in line and "database miss (lost its tuned schedule)" in line for line in lost)
    # the other way round nothing was lost (NEW tuned, BASE a miss): no regression
    back = run_cli("compare", missed.bundle, tuned.bundle, "--fail-on", "tuning")
    assert back.returncode == 0 and "no regression" in back.stdout


def test_a_bundle_compiled_without_tune_on_either_side(tuned, tmp_path):
    """The tuned bundle without its ledger stands for the same model compiled without --tune."""
    plain = tmp_path / "plain.bundle"
    shutil.copytree(tuned.bundle, plain)
    (plain / "tuning.json").unlink()
    lost = run_cli("compare", tuned.bundle, plain, "--fail-on", "tuning")
    assert lost.returncode == EXIT_REGRESSION and "has no tuning.json" in lost.stdout
    assert "REGRESSION node 2 MatMul fc2: tuning tuned" in lost.stdout and "→ no tuning" in lost.stdout
    base = run_cli("compare", plain, tuned.bundle, "--fail-on", "tuning")
    assert base.returncode == 2 and "the tuning rule needs a tuned BASE" in base.stderr and str(plain) in base.stderr
    wrong = run_cli("compare", tuned.bundle, tuned.bundle, "--fail-on", "tuning>+5%")
    assert wrong.returncode == 2 and "'tuning' takes no amount" in wrong.stderr and "Traceback" not in wrong.stderr
    same = run_cli("compare", tuned.bundle, tuned.bundle, "--fail-on", "tuning")
    assert same.returncode == 0 and "no regression" in same.stdout

"""``tvm-explorer memory BUNDLE [--json] [--at STEP]`` through the real CLI."""

from __future__ import annotations

import json
import shutil

from tests.conftest import run_cli

from tvm_explorer.bundle.sections.memory import MEMORY_FILE


def test_the_report_puts_the_peak_first_and_names_its_layers(bundles, gt_model):
    bundle = bundles.get(gt_model, "c")
    out = run_cli("memory", bundle, check=True).stdout
    assert out.index("Peak: 596 B at step 2 of 3") < out.index("Timeline, biggest steps first")
    assert "alloc [1, 6, 6, 4] float32" in out and "op 2 RELU relu/output" in out
    assert "not measured: compiled without --profile" in out
    rows = out[out.index("Timeline") :].splitlines()[2:]
    assert [r.split()[0] for r in rows[:3]] == ["2", "0", "1"]  # biggest first, ties in order


def test_json_and_at_a_step(bundles, gt_model):
    bundle = bundles.get(gt_model, "c")
    got = json.loads(run_cli("memory", bundle, "--json", "--at", "0", check=True).stdout)
    assert got["step"] == 0 and got["breakdown"]["live_bytes"] == 576
    assert got["memory"]["peak"]["step"] == 2 and got["advice"] == []
    text = run_cli("memory", bundle, "--at", "1", check=True).stdout
    assert "Step 1 (the peak is 596 B at step 2): 576 B" in text


def test_errors_are_one_line_naming_what_is_wrong(bundles, gt_model, tmp_path):
    bundle = bundles.get(gt_model, "c")
    bad = run_cli("memory", bundle, "--at", "7")
    assert bad.returncode == 2 and "--at 7: the timeline of" in bad.stderr and "steps 0 to 2" in bad.stderr
    copy = tmp_path / "old.bundle"
    shutil.copytree(bundle, copy)
    (copy / MEMORY_FILE).write_text('{"schema_version": 1, "function": 7}')
    bad = run_cli("memory", copy)
    assert bad.returncode == 2 and "Traceback" not in bad.stderr
    assert f"{MEMORY_FILE}: 'function' must be a string" in bad.stderr
    (copy / MEMORY_FILE).unlink()
    bad = run_cli("memory", copy)
    assert bad.returncode == 2 and "has no memory.json" in bad.stderr

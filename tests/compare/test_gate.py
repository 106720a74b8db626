"""``compare --fail-on``: cost regressions between two real profiled bundles of one model — a
baseline, a rebuild of the same config, and one whose pipeline leaves the schedule out for the
last convolution (4× slower by construction: its inner loop strides over the weights instead of
streaming them) — exit codes, the spread rule, and the Markdown and JUnit reports."""

from __future__ import annotations

import json
import shutil
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from tests.conftest import run_cli

from tvm_explorer.compare.compare import compare
from tvm_explorer.compare.gate import judge
from tvm_explorer.compare.gate_report import junit, markdown
from tvm_explorer.compare.rules import BadFailOn, parse
from tvm_explorer.errors import EXIT_ERROR, EXIT_REGRESSION

SCHEDULES = Path(__file__).resolve().parent / "schedules.py"
SPEC = "time>+50%,code>+20%"


def two_convs(path: Path) -> Path:
    """CONV_2D → RELU → CONV_2D on a 16×16×32 input (ops 0, 1, 2): small enough to stay in the
    caches, so that its times move little between builds."""
    from tests.tflite_builder import GraphBuilder

    g = GraphBuilder(seed=5)
    x = g.input("input", [1, 16, 16, 32])
    y = g.conv2d(x, 32, 3, name="conv_a", padding="SAME")
    y = g.relu(y, name="act")
    y = g.conv2d(y, 32, 3, name="conv_b", padding="SAME")
    g.output(y)
    path.write_bytes(g.build())
    return path


@pytest.fixture(scope="module")
def profiled(tmp_path_factory) -> dict[str, Path]:
    """base and rebuild (the same pipeline, compiled twice) and slow (conv_b unscheduled)."""
    root = tmp_path_factory.mktemp("gate")
    model = two_convs(root / "two_convs.tflite")
    out = {}
    for name, function in (("base", "scheduled"), ("rebuild", "scheduled"), ("slow", "last_unscheduled")):
        out[name] = root / f"{name}.bundle"
        run_cli(
            "compile",
            model,
            "-o",
            out[name],
            "--target",
            "llvm",
            "--profile",
            "--repeat",
            10,
            "--pipeline",
            f"{SCHEDULES}:{function}",
            check=True,
        )
    return out


def _gate(a, b, *extra) -> tuple[int, dict]:
    proc = run_cli("compare", a, b, "--json", *extra)
    assert proc.returncode in (0, EXIT_REGRESSION), proc.stderr
    return proc.returncode, json.loads(proc.stdout)["gate"]


def test_the_planted_slow_layer_fails_and_is_named(profiled):
    proc = run_cli("compare", profiled["base"], profiled["slow"], "--fail-on", SPEC)
    assert proc.returncode == EXIT_REGRESSION == 6, proc.stderr
    assert proc.stderr == ""
    verdict = proc.stdout.split("\n\n")[-1]
    assert verdict.startswith("fail-on time>+50%,code>+20%: 2 regressions"), verdict
    lines = [ln.strip() for ln in verdict.splitlines()[1:]]
    assert lines[0].startswith("REGRESSION op 2 CONV_2D conv_b/output: time "), lines
    assert lines[1].startswith("REGRESSION whole model: time "), lines
    assert len(lines) == 2
    code, gate = _gate(profiled["base"], profiled["slow"], "--fail-on", SPEC)
    assert code == EXIT_REGRESSION and gate["failed"]
    conv_b = gate["layers"][2]
    assert (conv_b["op_index"], conv_b["name"], conv_b["regression"]) == (2, "conv_b/output", True)
    time = conv_b["metrics"]["time"]
    assert time["relative"] > 2.0, time  # 4x slower by construction
    # beyond the spread: every run of NEW slower than every run of BASE
    assert time["spread_after"]["min"] > time["spread_before"]["max"]
    assert time["spread_before"]["runs"] == time["spread_after"]["runs"] == 10
    assert [r["label"] for r in gate["regressions"]] == ["op 2", "model"]


def test_the_same_bundle_and_a_rebuild_pass(profiled):
    strict = "time>+0%,code>+0%,workspace>+0%"
    proc = run_cli("compare", profiled["base"], profiled["base"], "--fail-on", strict)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "no regression (3 layers and the whole model checked" in proc.stdout
    # a rebuild: the same code, times within the noise of two builds
    code, gate = _gate(profiled["base"], profiled["rebuild"], "--fail-on", "time>+50%,code>+0%,workspace>+0%")
    assert code == 0 and not gate["failed"], gate["regressions"]
    assert all(not lay["metrics"]["code"]["changed"] for lay in gate["layers"])


def _with_runs(src: Path, dst: Path, op_index: int, scale: float, shift: float, extra_ms: float = 0.0) -> Path:
    """A copy of a real bundle whose layer ``op_index`` ran ``scale`` times as long with its
    runs' range moved by ``shift`` (a fraction of the range) plus ``extra_ms``: NEW for the
    spread rule."""
    shutil.copytree(src, dst)
    costs = json.loads((dst / "costs.json").read_text())
    lay = next(e for e in costs["layers"] if e["op_index"] == op_index)
    runs = lay["time_runs_ms"]
    width = max(runs) - min(runs)
    lay["time_runs_ms"] = [round(t * scale + shift * width + extra_ms, 4) for t in runs]
    lay["time_ms"] = round(lay["time_ms"] * scale + shift * width + extra_ms, 4)
    (dst / "costs.json").write_text(json.dumps(costs))
    return dst


def test_a_tiny_threshold_within_the_runs_spread_does_not_fail(profiled, tmp_path):
    """The rule: a time regression needs the threshold *and* runs that do not overlap."""
    base = profiled["base"]
    runs = json.loads((base / "costs.json").read_text())["layers"][0]["time_runs_ms"]
    assert max(runs) > min(runs)  # the real runs of the layer have a spread
    # conv_a's runs moved up by half their range: its median grew, but the runs overlap
    noisy = _with_runs(base, tmp_path / "noisy.bundle", 0, 1.0, 0.5)
    code, gate = _gate(base, noisy, "--fail-on", "time>+0.1%")
    grown = gate["layers"][0]["metrics"]["time"]
    assert grown["delta"] > 0 and grown["relative"] > 0.001, grown
    assert code == 0 and not gate["failed"]
    assert grown["changed"] is False  # within noise: not even shown as a change
    # past their whole range but by less than the clock's resolution (the runs are 0.2 µs
    # apart): still one measurement's noise (a CI run flagged an unchanged conv so)
    touching = _with_runs(base, tmp_path / "touching.bundle", 0, 1.0, 1.0, 0.0002)
    code, gate = _gate(base, touching, "--fail-on", "time>+0.1%")
    assert code == 0 and gate["layers"][0]["metrics"]["time"]["changed"] is False, gate["regressions"]
    # moved past their whole range, and by more than the clock's 1 µs: the same threshold
    # fails, naming conv_a
    apart = _with_runs(base, tmp_path / "apart.bundle", 0, 1.0, 1.5, 0.01)
    code, gate = _gate(base, apart, "--fail-on", "layer.time>+0.1%")
    assert code == EXIT_REGRESSION and [r["label"] for r in gate["regressions"]] == ["op 0"]
    # ... but not past a threshold it stays under (rules of one metric must all be exceeded)
    code, gate = _gate(base, apart, "--fail-on", "time>+0.1%,time>+10ms")
    assert code == 0, gate["regressions"]


def test_markdown_table_for_a_pull_request(profiled, tmp_path):
    out = tmp_path / "report.md"
    proc = run_cli(
        "compare", profiled["base"], profiled["slow"], "--fail-on", SPEC, "--format", "markdown", "--output", out
    )
    assert proc.returncode == EXIT_REGRESSION, proc.stderr
    assert "REGRESSION op 2 CONV_2D conv_b/output" in proc.stdout  # the verdict still on stdout
    text = out.read_text()
    assert text.startswith("### ❌ 2 cost regressions beyond `time>+50%,code>+20%`\n")
    rows = [ln for ln in text.splitlines() if ln.startswith("|")]
    cells = [[c.strip() for c in row.strip("|").split("|")] for row in rows]
    assert cells[0] == ["", "layer", "time", "code", "workspace"]
    assert set(cells[1]) <= {"---"}
    body = cells[2:]
    assert body[0][0] == "❌ regression" and body[0][1] == "op 2 `CONV_2D` `conv_b/output`"
    before, after = body[0][2].strip("*").split(" (")[0].split(" → ")
    assert float(after.removesuffix(" ms")) > 2 * float(before), body[0]
    assert body[0][2].startswith("**") and "%)**" in body[0][2]
    assert body[-1][1] == "**whole model**" and body[-1][0] == "❌ regression"
    # conv_a and the RELU are no regressions; they are listed only if their times moved out of
    # the runs' noise (a drift between two builds can do that)
    assert all(row[0] in ("changed", "improved") for row in body[1:-1]), body
    changed = len(body) - 1  # the layer rows
    assert f"{changed} of 3 layers changed, {3 - changed} unchanged." in text
    # a passing comparison: the verdict says so, the table has the model total
    proc = run_cli("compare", profiled["base"], profiled["base"], "--fail-on", SPEC, "--format", "markdown")
    assert proc.returncode == 0 and proc.stdout.startswith("### ✅ no cost regression beyond")
    assert "| **whole model** |" in proc.stdout


def test_junit_report_one_case_per_layer(profiled, tmp_path):
    out = tmp_path / "junit.xml"
    proc = run_cli(
        "compare", profiled["base"], profiled["slow"], "--fail-on", SPEC, "--format", "junit", "--output", out
    )
    assert proc.returncode == EXIT_REGRESSION, proc.stderr
    root = ET.parse(out).getroot()
    assert root.tag == "testsuites"
    (suite,) = root.findall("testsuite")
    cases = suite.findall("testcase")
    assert [c.get("name") for c in cases] == [
        "op 0 CONV_2D conv_a/output",
        "op 1 RELU act/output",
        "op 2 CONV_2D conv_b/output",
        "whole model",
    ]
    assert suite.get("tests") == "4" and suite.get("failures") == "2" and suite.get("errors") == "0"
    failed = {c.get("name"): c.findall("failure") for c in cases}
    assert [f.get("message").split(";")[0] for f in failed["op 2 CONV_2D conv_b/output"]][0].startswith("time ")
    assert failed["op 0 CONV_2D conv_a/output"] == [] and failed["op 1 RELU act/output"] == []
    assert len(failed["whole model"]) == 1
    props = {p.get("name"): p.get("value") for p in suite.iter("property")}
    assert props["fail_on"] == "time>+50%,code>+20%"


def test_names_from_the_bundle_are_inert_in_both_reports(profiled):
    """A layer name is the model's (untrusted): it cannot break the table, start a link, or
    make the XML unreadable (control characters, a lone surrogate)."""
    hostile = 'x|y\n| 1 | 2 |[link](https://e.com)<b>&"\x01\x1b\ud800`'
    gate = judge(compare(profiled["base"], profiled["slow"]), parse(SPEC))
    gate.layers[2].name = hostile
    gate.layers[2].opcode = "CONV|<2D>"
    text = markdown(gate)
    rows = [ln for ln in text.splitlines() if ln.startswith("|")]
    assert rows[-1].startswith("| ❌ regression | **whole model** |")
    (row,) = [ln for ln in rows if "CONV\\|" in ln]
    assert rows.index(row) == 2  # regressions first; the name's line break started no row
    # opcode and name are code spans (nothing inside is a link or HTML), their pipes escaped
    assert row.startswith("| ❌ regression | op 2 `CONV\\|<2D>` `` x\\|y \\| 1 \\| 2 \\|[link](https://e.com)<b>&")
    # every row has the table's 5 cells: the escaped pipes add none, the line break no row
    assert all(len(r.replace("\\|", "").split("|")) == 7 for r in rows), rows
    root = ET.fromstring(junit(gate).encode("utf-8"))
    names = [c.get("name") for c in root.iter("testcase")]
    assert names[2] == 'op 2 CONV|<2D> x|y | 1 | 2 |[link](https://e.com)<b>&"\\x01\\x1b\\ud800`'
    failure = root.find(".//testcase[@name='whole model']/failure")
    assert failure is not None and failure.get("type") == "cost regression"
    from tvm_explorer.compare.gate_report import summary

    (line,) = [ln for ln in summary(gate) if "CONV|" in ln]  # one line in a terminal or CI log
    assert line.startswith('  REGRESSION op 2 CONV|<2D> x|y\\n| 1 | 2 |[link](https://e.com)<b>&"\\x01\\x1b\\ud800`: ')


def test_time_rules_need_measured_time(profiled, models_dir, bundles, tmp_path):
    plain = bundles.get(models_dir / "small_cnn_fp32.tflite", "c")  # compiled without --profile
    proc = run_cli("compare", plain, plain, "--fail-on", "time>+10%")
    assert proc.returncode == EXIT_ERROR and "Traceback" not in proc.stderr, proc.stderr
    assert f"BASE {plain} has no measured time (compiled without --profile)" in proc.stderr
    assert "a time rule needs both bundles compiled with --profile" in proc.stderr
    assert proc.stdout == ""
    # code and workspace are recorded for every bundle
    proc = run_cli("compare", plain, plain, "--fail-on", "code>+0%,memory>+0%", "--format", "junit")
    assert proc.returncode == 0, proc.stderr
    assert ET.fromstring(proc.stdout).find("testsuite").get("failures") == "0"
    # one side measured, the other not: the message names NEW
    unprofiled = tmp_path / "unprofiled.bundle"
    shutil.copytree(profiled["base"], unprofiled)
    costs = json.loads((unprofiled / "costs.json").read_text())
    costs["profile"].update(status="not_requested", reason="compiled without --profile")
    costs["total_ms"] = None
    (unprofiled / "costs.json").write_text(json.dumps(costs))
    proc = run_cli("compare", profiled["base"], unprofiled, "--fail-on", "time>+10%", "--format", "markdown")
    assert proc.returncode == EXIT_ERROR and proc.stdout == ""
    assert f"NEW {unprofiled} has no measured time" in proc.stderr and "BASE" not in proc.stderr


def test_times_from_a_device_and_from_this_machine_are_not_compared(profiled, tmp_path):
    """A profile taken on a board through TVM's RPC (issue 31) against one taken here: a time
    rule is refused naming both places; code rules still judge."""
    remote = tmp_path / "remote.bundle"
    shutil.copytree(profiled["base"], remote)
    costs = json.loads((remote / "costs.json").read_text())
    costs["profile"].update(
        where="remote",
        remote={
            "via": "tracker",
            "address": "127.0.0.1:9190",
            "key": "board-a",
            "combined": "median",
            "devices": [
                {
                    "address": "10.0.0.7:9090",
                    "key": "board-a",
                    "triple": "aarch64-linux-gnu",
                    "cpu": "cortex-a76",
                    "threads": 4,
                    "description": "rk3588",
                }
            ],
        },
    )
    (remote / "costs.json").write_text(json.dumps(costs))
    proc = run_cli("compare", profiled["base"], remote, "--fail-on", "time>+10%")
    assert proc.returncode == EXIT_ERROR and "Traceback" not in proc.stderr, proc.stderr
    assert "measured on cortex-a76 (key board-a)" in proc.stderr and "not comparable" in proc.stderr
    proc = run_cli("compare", profiled["base"], remote, "--fail-on", "code>+0%")
    assert proc.returncode == 0, proc.stderr


@pytest.mark.parametrize(
    "spec, message",
    [
        ("tim>+10%", "unknown metric 'tim': time, code, workspace, memory or tuning"),
        ("time>10", "no unit for time: use % or ms, us or s"),
        ("time>=+10%", "'>=': a rule says how much a cost may grow, with '>'"),
        ("time>-5%", "a negative threshold"),
        ("time>+10%,,code>+1", "(rule ''): an empty rule"),
        ("cpu.time>+1%", "unknown scope 'cpu': model or layer"),
        ("code>+5ms", "unit 'ms' for code: use % or lines or none"),
        ("workspace>+1KB", "unit 'KB' for workspace"),
        ("", "no rule"),
        ("time>+", "no number after '>'"),
    ],
)
def test_a_malformed_spec_gets_one_message(spec, message):
    with pytest.raises(BadFailOn) as err:
        parse(spec)
    assert message in str(err.value) and "docs/compare.md" in str(err.value)
    assert "\n" not in str(err.value)


def test_the_grammar():
    rules = parse(" time > +10 % , model.time>+2%,layer.code>+20,memory>+1.5KiB,time>+50us")
    assert [r.text for r in rules] == [
        "time>+10%",
        "model.time>+2%",
        "layer.code>+20",
        "workspace>+1.5KiB",
        "time>+50us",
    ]
    assert rules[3].amount == 1536 and not rules[3].relative and rules[4].amount == pytest.approx(0.05)
    assert rules[0].exceeded(1.0, 1.2) and not rules[0].exceeded(1.0, 1.05)
    assert parse("code>+10%")[0].exceeded(0, 3)  # from nothing: beyond any percentage


def test_a_spec_is_checked_before_the_bundles_are_read(tmp_path):
    proc = run_cli("compare", tmp_path / "a", tmp_path / "b", "--fail-on", "time>+10")
    assert proc.returncode == EXIT_ERROR and proc.stderr.count("\n") == 1, proc.stderr
    assert "--fail-on 'time>+10': no unit for time" in proc.stderr


def test_a_gate_never_passes_on_costs_it_cannot_read(profiled, tmp_path):
    damaged = tmp_path / "damaged.bundle"
    shutil.copytree(profiled["base"], damaged)
    (damaged / "costs.json").write_text("{not json")
    proc = run_cli("compare", profiled["base"], damaged, "--fail-on", "code>+20%")
    assert proc.returncode == EXIT_ERROR and proc.stdout == "", proc.stdout
    assert proc.stderr.startswith(f"tvm-explorer: error: NEW {damaged}/costs.json") and proc.stderr.count("\n") == 1
    # the comparison table alone still leaves damaged costs out
    assert run_cli("compare", profiled["base"], damaged).returncode == 0
    proc = run_cli("compare", profiled["base"], profiled["base"], "--json", "--format", "junit")
    assert proc.returncode == EXIT_ERROR and "--json and --format junit" in proc.stderr
    report = tmp_path / "missing-dir" / "report.md"
    proc = run_cli(
        "compare", profiled["base"], profiled["slow"], "--fail-on", SPEC, "--format", "markdown", "--output", report
    )
    assert proc.returncode == EXIT_ERROR and f"--output {report}: cannot write the report" in proc.stderr
    assert not report.parent.exists()

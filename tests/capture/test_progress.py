"""Compile progress: JSON lines for programs (the VS Code command reads them), a rich bar on a
terminal, and silence when stdout is neither asked for nor a terminal. Real CLI, real TVM."""

from __future__ import annotations

import json
import os
import pty
import re
import select
import sys

import pytest

from conftest import CLI, run_cli

STAGE_ORDER = ["import", "relax", "tir", "code", "run", "write"]


def _lines(stdout: str) -> list[dict]:
    return [json.loads(line) for line in stdout.splitlines() if line.startswith("{")]


def _events(stdout: str) -> list[dict]:
    """The finished steps (``start`` lines say what begins)."""
    return [e for e in _lines(stdout) if e["event"] == "progress"]


@pytest.mark.parametrize("target,sources", [("c", 1), ("cuda", 2)])
def test_json_progress_counts_every_recorded_step_exactly(tmp_path, models_dir, target, sources):
    out = tmp_path / "m.bundle"
    proc = run_cli("compile", models_dir / "small_cnn_fp32.tflite", "-o", out, "--target", target, "--progress", "json")
    assert proc.returncode == 0, proc.stderr
    events = _events(proc.stdout)
    assert events and all(e["event"] == "progress" for e in events)
    # The planned total is exact from the first event on: pass n of N never jumps.
    totals = {e["total"] for e in events}
    assert totals == {len(events)}, totals
    assert [e["done"] for e in events] == list(range(1, len(events) + 1))
    # Every recorded pass of the bundle was one step (plus the final "write").
    manifest = json.loads((out / "manifest.json").read_text())
    assert [e["name"] for e in events[:-1]] == [p["name"] for p in manifest["passes"]]
    stages = [e["stage"] for e in events]
    assert stages[0] == "import" and stages[-1] == "write" and stages.count("code") == sources
    ranks = [STAGE_ORDER.index(s) for s in stages]
    assert ranks == sorted(ranks), "stages out of pipeline order"
    elapsed = [e["elapsed"] for e in events]
    assert elapsed == sorted(elapsed)
    # The human summary still follows the events.
    assert "Bundle written:" in proc.stdout.split(json.dumps(events[-1]))[-1]
    _assert_each_step_is_announced_as_it_starts(_lines(proc.stdout))


def _assert_each_step_is_announced_as_it_starts(lines: list[dict]) -> None:
    """Every pass, codegen step and the write is announced by a ``start`` line before its
    finished line, with the steps finished so far (what Compile Model… shows as running)."""
    assert {e["event"] for e in lines} == {"progress", "start"}
    done = 0
    running = None
    for e in lines:
        if e["event"] == "start":
            assert e["done"] == done and e["total"] > done, e
            running = e
        else:
            if e["stage"] in ("relax", "tir", "code") and e["name"] != "input":
                assert running is not None and running["name"] == e["name"], (running, e)
                assert running["elapsed"] <= e["elapsed"]
            done = e["done"]
            running = None
    starts = [e for e in lines if e["event"] == "start"]
    assert starts[-1]["stage"] == "write" and starts[-1]["name"] == "writing the bundle"
    assert any(e["name"] == "FuseOps" for e in starts)


def test_profile_and_numerics_are_steps_of_the_planned_total(tmp_path, models_dir):
    """The runs after the build (they can take longer than the compile) are announced as they
    start, inside the planned total: the bar never sits at "n of n" while the model runs."""
    out = tmp_path / "r.bundle"
    proc = run_cli(
        "compile",
        models_dir / "small_cnn_fp32.tflite",
        "-o",
        out,
        "--target",
        "llvm",
        "--profile",
        "--repeat",
        "2",
        "--numerics",
        "--progress",
        "json",
    )
    assert proc.returncode == 0, proc.stderr
    events = _events(proc.stdout)
    assert {e["total"] for e in events} == {len(events)}
    assert all(e["total"] == len(events) for e in _lines(proc.stdout))
    runs = [e for e in events if e["stage"] == "run"]
    assert [e["name"].split(":")[0] for e in runs] == ["profile", "numerics"]
    assert events[-1]["stage"] == "write" and events[-3:-1] == runs
    assert (out / "numerics.json").is_file()
    assert json.loads((out / "costs.json").read_text())["profile"]


def test_quiet_when_stdout_is_not_a_terminal(tmp_path, models_dir):
    proc = run_cli("compile", models_dir / "small_cnn_fp32.tflite", "-o", tmp_path / "q.bundle")
    assert proc.returncode == 0, proc.stderr
    assert "\x1b" not in proc.stdout + proc.stderr
    assert not _events(proc.stdout)
    assert proc.stdout.startswith("Bundle written:")
    assert proc.stderr == ""


def test_json_progress_of_a_failing_compile_ends_with_the_one_error(tmp_path):
    bad = tmp_path / "bad.tflite"
    bad.write_bytes(b"not a flatbuffer at all")
    proc = run_cli("compile", bad, "-o", tmp_path / "b.bundle", "--progress", "json")
    assert proc.returncode == 2
    assert proc.stderr.count("tvm-explorer: error:") == 1 and "bad.tflite" in proc.stderr
    assert not (tmp_path / "b.bundle").exists()


def test_bar_on_a_terminal_shows_stage_pass_n_of_total_and_elapsed(tmp_path, models_dir):
    """Run under a real pseudo-terminal, as a person at a shell would."""
    pid, fd = pty.fork()
    if pid == 0:  # child: the CLI with the pty as its terminal
        os.execv(
            sys.executable,
            [
                *CLI,
                "compile",
                str(models_dir / "small_cnn_fp32.tflite"),
                "-o",
                str(tmp_path / "t.bundle"),
            ],
        )
    chunks = []
    while True:
        ready, _, _ = select.select([fd], [], [], 120)
        if not ready:
            break
        try:
            data = os.read(fd, 65536)
        except OSError:
            break
        if not data:
            break
        chunks.append(data)
    _, status = os.waitpid(pid, 0)
    text = b"".join(chunks).decode("utf-8", "replace")
    assert os.WEXITSTATUS(status) == 0, text
    plain = re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", text)
    frames = [f for f in re.split(r"[\r\n]", plain) if "/" in f and "━" in f]
    assert frames, plain
    last = frames[-1]
    m = re.search(r"(\d+)/(\d+)", last)
    assert m and m.group(1) == m.group(2), last
    assert re.search(r"\d:\d\d:\d\d", last), last  # elapsed
    # the stage labels of the bar (a stage can pass between two of its 10 redraws a second:
    # any redraw of the bar, whole or cut by the terminal's width, counts)
    assert "Relax" in plain and "TIR" in plain, plain
    assert "Bundle written:" in plain

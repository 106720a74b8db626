"""Timing goals the tests measure but assert only to an order of magnitude (issue 44: no
wall-clock targets in a suite run on a shared 2-core machine): runs the tests that measure them
(``--reps`` times; with ``--editor`` also the editor suites, code-server + chromium) and prints
each goal with its target, the median and worst measurement, and the ratio to the target.

The tests record every measurement in test-artifacts/timing-goals.jsonl (tests/timing_goals.py,
tests/e2e/lib/timingGoals.mjs); this script clears that file first.

    .venv/bin/python bench/timing_goals.py [--reps 3] [--editor] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

import benchlib as bl

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
from tests.timing_goals import goals_file  # noqa: E402

PYTEST_TESTS = [
    "tests/lsp/test_real_bundles.py::test_every_indexed_position_answers_quickly",
    "tests/lsp/test_hostile_reads.py::test_definition_reads_a_source_file_bounded_and_off_the_event_loop",
    "tests/lsp/test_hostile_bundles.py::test_previous_stage_over_thousands_of_same_key_ranges_is_fast",
]
EDITOR_SUITES = ["big_bundle.test.mjs", "small_cnn.test.mjs"]  # jumps.suite.mjs runs in the latter


def _run(cmd: list[str], cwd: Path, env: dict | None = None) -> None:
    proc = subprocess.run(cmd, cwd=cwd, env=env, stdin=subprocess.DEVNULL, capture_output=True, text=True)
    if proc.returncode != 0:
        sys.stderr.write(proc.stdout[-4000:] + proc.stderr[-4000:])
        raise SystemExit(f"{' '.join(cmd)} failed (exit {proc.returncode})")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--reps", type=int, default=3, help="runs of the measuring tests (default 3)")
    ap.add_argument("--editor", action="store_true", help="also the editor suites (code-server + chromium, minutes)")
    ap.add_argument("--json", help="write the results here")
    args = ap.parse_args()
    goals_file().unlink(missing_ok=True)
    for _ in range(args.reps):
        _run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *PYTEST_TESTS], REPO)
    if args.editor:
        _run(["npm", "run", "--silent", "package"], REPO)
        env = {**os.environ, "TVM_EXPLORER_PYTHON": os.environ.get("TVM_EXPLORER_PYTHON", sys.executable)}
        for _ in range(args.reps):
            _run(["node", "--test", "--test-concurrency=1", *EDITOR_SUITES], REPO / "tests" / "e2e", env)
    measured: dict[str, list[float]] = {}
    targets: dict[str, float] = {}
    for line in goals_file().read_text().splitlines():
        entry = json.loads(line)
        measured.setdefault(entry["goal"], []).append(entry["seconds"])
        targets[entry["goal"]] = entry["target_s"]
    rows, results = [], []
    for goal, values in measured.items():
        median, worst, target = statistics.median(values), max(values), targets[goal]
        rows.append(
            [
                goal,
                f"{target * 1000:.0f} ms",
                f"{median * 1000:.1f} ms",
                f"{worst * 1000:.1f} ms",
                f"{median / target:.2f}",
                bl.verdict(median, target),
            ]
        )
        results.append({"goal": goal, "target_s": target, "runs": values})
    print(bl.machine_note())
    print(bl.table(["goal", "target", "median", "worst", "median/target", ""], rows))
    bl.save_json(args.json, results)


if __name__ == "__main__":
    main()

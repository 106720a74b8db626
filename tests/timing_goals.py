"""Timing goals, measured by the tests that exercise them and judged in bench/.

A test asserts only an order of magnitude (the CI machine is shared and slow); the goal itself
(a 1 s hover, 50 ms a lookup) is recorded here, one JSON line per measurement in
``test-artifacts/timing-goals.jsonl``, and bench/timing_goals.py runs those tests and prints each
measurement against its goal. tests/e2e/lib/timingGoals.mjs writes the same lines.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def goals_file() -> Path:
    artifacts = Path(os.environ.get("TVM_EXPLORER_ARTIFACTS") or REPO / "test-artifacts")
    return artifacts / "timing-goals.jsonl"


def record(goal: str, seconds: float, target_s: float) -> None:
    """Keep one measurement of ``goal`` (``seconds``) beside its target."""
    path = goals_file()
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a") as f:
        f.write(json.dumps({"goal": goal, "seconds": seconds, "target_s": target_s}) + "\n")

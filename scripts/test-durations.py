"""Write tests/file_seconds.json (seconds per test file) from a run's JUnit report.

scripts/test.sh writes test-artifacts/junit.xml on every run; tests/conftest.py starts the
longest files first so that the parallel workers finish together. Run this after a full run on
a machine like CI's when files grew or moved:

    .venv/bin/python scripts/test-durations.py test-artifacts/junit.xml
"""

from __future__ import annotations

import json
import sys
import xml.etree.ElementTree as ET
from collections import defaultdict
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
OUT = REPO / "tests" / "file_seconds.json"


def file_seconds(junit: Path) -> dict[str, float]:
    """Test file (as pytest names it, relative to the repo) -> seconds, longest first."""
    totals: dict[str, float] = defaultdict(float)
    for case in ET.parse(junit).iter("testcase"):
        # pytest's classname is the module path with dots ("tests.lsp.test_hover" or
        # "tests.lsp.test_hover.TestClass"); its file is the longest prefix that exists.
        parts = case.get("classname", "").split(".")
        for end in range(len(parts), 0, -1):
            path = "/".join(parts[:end]) + ".py"
            if (REPO / path).is_file():
                totals[path] += float(case.get("time", 0))
                break
    return dict(sorted(((p, round(t, 1)) for p, t in totals.items()), key=lambda item: -item[1]))


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print(__doc__.strip().splitlines()[-1].strip(), file=sys.stderr)
        return 2
    junit = Path(argv[0])
    if not junit.is_file():
        print(f"{junit}: no such report (scripts/test.sh writes test-artifacts/junit.xml)", file=sys.stderr)
        return 2
    seconds = file_seconds(junit)
    OUT.write_text(json.dumps(seconds, indent=1) + "\n")
    print(f"{OUT.relative_to(REPO)}: {len(seconds)} files, {sum(seconds.values()) / 60:.1f} min in all")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

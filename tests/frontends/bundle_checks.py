"""Checks the ONNX and PyTorch tests make on the bundles they compile."""

from __future__ import annotations

import json
import re
from pathlib import Path

from conftest import run_cli
from tvm_explorer.bundle.reader import Bundle


def origins(bundle: Path, position: str) -> list[dict]:
    """What ``tvm-explorer origins BUNDLE POSITION --json`` says."""
    return json.loads(run_cli("origins", bundle, position, "--json", check=True).stdout)["origins"]


def lines_matching(bundle: Path, path: str, pattern: str) -> list[int]:
    """1-based numbers of the lines of document ``path`` that match ``pattern``."""
    lines = (bundle / path).read_text().split("\n")
    return [i + 1 for i, line in enumerate(lines) if re.search(pattern, line)]


def assert_full_coverage(bundle: Path) -> None:
    """Every Relax binding attributed after every pass; at least 99 % of TIR units."""
    for p in Bundle(bundle).manifest["passes"]:
        if p["stage"] == "relax":
            assert p["attributed"] == p["units"], f"{p['name']}: {p['attributed']}/{p['units']} bindings"
        elif p["units"]:
            assert p["attributed"] >= 0.99 * p["units"], f"{p['name']}: {p['attributed']}/{p['units']}"

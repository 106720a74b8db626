"""Text from a bundle reaches the terminal escaped, and positions are checked as positions:
a lone surrogate in a pass name or an opcode (JSON allows "\\ud800", UTF-8 output does not)
used to end `coverage` and `origins` in a UnicodeEncodeError; `origins X:1:-5` said "not a
document" instead of naming the column."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from conftest import run_cli
from tvm_explorer.bundle.reader import Bundle

C = "code/module.c"


@pytest.fixture(scope="module")
def good(gt_model, bundles) -> Path:
    return bundles.get(gt_model, "c")


def a_line_with_origins(root: Path) -> int:
    b = Bundle(root)
    lines = b.text(C).split("\n")
    for i, text in enumerate(lines):
        column = len(text) - len(text.lstrip())
        if text.strip() and b.origins_at(C, b.offset_of(C, i, column)):
            return i + 1
    raise AssertionError("no attributed line")


def clean(proc) -> str:
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stderr and not proc.stderr.strip(), proc.stderr
    return proc.stdout


@pytest.fixture
def surrogates(good, tmp_path) -> Path:
    """Every pass name and every opcode carries a lone surrogate (valid JSON)."""
    root = tmp_path / "b"
    shutil.copytree(good, root)
    manifest = json.loads((root / "manifest.json").read_text())
    for entry in manifest["passes"]:
        entry["name"] += "\ud800"
    (root / "manifest.json").write_text(json.dumps(manifest))
    index = json.loads((root / "index.json").read_text())
    for layer in index["layers"]:
        layer["opcode"] = "X\ud800" + layer["opcode"]
    (root / "index.json").write_text(json.dumps(index))
    return root


def test_lone_surrogates_are_printed_escaped(surrogates, good):
    assert "\\ud800" in clean(run_cli("coverage", surrogates))
    assert json.loads(clean(run_cli("coverage", surrogates, "--json")))["passes"][0]["name"].endswith("\ud800")
    position = f"{C}:{a_line_with_origins(good)}"
    assert "X\\ud800" in clean(run_cli("origins", surrogates, position))
    assert json.loads(clean(run_cli("origins", surrogates, position, "--json")))["origins"][0]["opcode"].startswith(
        "X\ud800"
    )


@pytest.mark.parametrize(
    "position,says",
    [
        ("X:1:-5", "column -5 is invalid (columns start at 1)"),
        (f"{C}:1:-5", "column -5 is invalid"),
        (f"{C}:1:0", "column 0 is invalid"),
        (f"{C}:-1:5", "line -1 is invalid (lines start at 1)"),
        (f"{C}:0", "line 0 is invalid"),
        (f"{C}:-3", "line -3 is invalid"),
        (f"{C}:1:100000", "column 100000 is past the end of line 1"),
        (f"{C}:100000", "line 100000 is past the end"),
        (f"{C}:x", "expected FILE:LINE[:COL]"),
        ("nope.c:3", "nope.c: not a document"),
    ],
)
def test_positions_that_are_not_valid_say_why(good, position, says):
    proc = run_cli("origins", good, position)
    assert proc.returncode == 2
    lines = proc.stderr.strip().split("\n")
    assert len(lines) == 1 and lines[0].startswith("tvm-explorer: error: ") and says in lines[0], proc.stderr

"""Run the real-editor e2e tests (tests/e2e/*.test.mjs: code-server + chromium) from pytest.

The node test runner runs once per pytest session (packaging the .vsix first); each node test
becomes one pytest test that reports its result. Needs `scripts/setup-e2e.sh` to have run:
without it the tests are skipped, except under CI=true where that is a failure.
"""

from __future__ import annotations

import html
import importlib.util
import os
import re
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
SUITES = sorted(p.name for p in HERE.glob("*.test.mjs"))  # every test file in this folder
# Suites that a test file imports to run them in its session (small_cnn.test.mjs).
IMPORTED = sorted(p.name for p in HERE.glob("*.suite.mjs"))
TEST_NAME = re.compile(r"^test\(\s*'([^']+)'", re.M)

pytestmark = pytest.mark.e2e

# What suites compile with `cache: true` they take from tests/bundle_store.py's store, which
# tests/conftest.py's BundleCache fills too: a compile either side made is not made again.


def _node_tests() -> list[str]:
    """Names of the node tests, read from the suites (so that each is a pytest test)."""
    names = [name for suite in SUITES + IMPORTED for name in TEST_NAME.findall((HERE / suite).read_text())]
    # as node names them: a JavaScript \uXXXX escape in the source is its character
    return [re.sub(r"\\u([0-9a-fA-F]{4})", lambda m: chr(int(m.group(1), 16)), name) for name in names]


def _missing_tools() -> str | None:
    if not shutil.which("node") or not shutil.which("npm"):
        return "node/npm not found"
    if not (REPO / "node_modules" / ".bin" / "code-server").exists():
        return "code-server not installed"
    if not Path(os.environ.get("TVM_EXPLORER_CHROMIUM", "/usr/bin/chromium")).exists():
        return "chromium not installed"
    return None


@pytest.fixture(scope="session")
def node_results(request) -> dict[str, str | None]:
    """Package the extension, run the node suites once; test name -> failure text or None."""
    missing = _missing_tools()
    if missing:
        message = f"{missing}: run scripts/setup-e2e.sh"
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)
    subprocess.run(
        ["npm", "run", "package"],
        cwd=REPO,
        check=True,
        stdout=subprocess.DEVNULL,
        stdin=subprocess.DEVNULL,
        timeout=600,
    )
    # kept with the run's other artifacts: each suite's time, for whoever shortens the run
    junit = REPO / "test-artifacts" / "e2e-junit.xml"
    junit.parent.mkdir(exist_ok=True)
    junit.unlink(missing_ok=True)
    env = {
        **os.environ,
        "TVM_EXPLORER_PYTHON": os.environ.get("TVM_EXPLORER_PYTHON", sys.executable),
        **_shared_inputs(request),
    }
    proc = subprocess.run(
        [
            "node",
            "--test",
            "--test-concurrency=1",
            "--test-reporter=spec",
            "--test-reporter-destination=stdout",
            "--test-reporter=junit",
            f"--test-reporter-destination={junit}",
            *SUITES,
        ],
        cwd=HERE,
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=2700,
    )
    sys.stdout.write(proc.stdout)
    sys.stderr.write(proc.stderr)
    if not junit.exists():
        pytest.fail(
            f"node --test wrote no report (exit {proc.returncode}):\n{proc.stdout[-4000:]}\n{proc.stderr[-4000:]}"
        )
    results: dict[str, str | None] = {}
    for case in _junit_cases(junit):
        # node's junit reporter escapes quotes twice: unescape what XML parsing left.
        case.set("name", html.unescape(case.get("name", "")))
        failure = case.find("failure")
        skipped = case.find("skipped")
        if skipped is not None:  # a `todo` test reports its failure as well: it is not one
            results[case.get("name", "")] = "skipped: " + (skipped.get("message") or "")
        elif failure is not None:
            results[case.get("name", "")] = (failure.get("message") or "") + "\n" + (failure.text or "")
        else:
            results[case.get("name", "")] = None
    if proc.returncode != 0 and all(v is None for v in results.values()):
        pytest.fail(f"node --test failed outside the tests (exit {proc.returncode}):\n{proc.stdout[-4000:]}")
    return results


# Characters XML 1.0 does not allow, which node's junit reporter writes as they are: a failure
# message with playwright's colours (ESC) made the whole report unreadable, and every e2e test
# an error instead of the one failure.
NOT_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ufffe\uffff]")


def _junit_cases(junit: Path) -> list[ET.Element]:
    """The ``testcase`` elements of node's junit report, its characters XML forbids dropped."""
    text = NOT_XML.sub("", junit.read_text(encoding="utf-8", errors="replace"))
    return list(ET.fromstring(text).iter("testcase"))


def _shared_inputs(request) -> dict[str, str]:
    """The environment that hands node what this session builds anyway: the tiny Llama's
    exported program (llm.test.mjs)."""
    if "TVM_EXPLORER_PYTHON" in os.environ:  # another interpreter compiles for node: not ours
        return {}
    if importlib.util.find_spec("transformers"):
        return {"TVM_EXPLORER_E2E_LLAMA_PT2": str(request.getfixturevalue("llm_bundles").program("llama"))}
    return {}


@pytest.mark.parametrize("name", _node_tests())
def test_vscode(node_results: dict[str, str | None], name: str) -> None:
    """One e2e test in code-server (see tests/e2e/*.test.mjs; screenshots in test-artifacts/vscode)."""
    assert name in node_results, f"node test {name!r} did not run (setup failed?): {sorted(node_results)}"
    outcome = node_results[name]
    if outcome is not None and outcome.startswith("skipped: "):
        pytest.skip(outcome)
    assert outcome is None, outcome

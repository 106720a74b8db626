"""The architecture invariants of docs/architecture.md, each checked here.

- the rooms form layers, no room imports one above it (module level or inside a function),
  only ``lsp`` imports pygls/lsprotocol, ``bundle``/``navigation``/``lsp`` import no TVM,
  capture knows nothing of editors: the import-linter contracts in pyproject.toml;
- serving a real bundle (the server built, a bundle loaded, hovers and definitions answered)
  imports no TVM at run time;
- which model kind a model is, is decided in ``frontends/`` only;
- the version is written once;
- every room is described in docs/architecture.md, and every contract is named there;
- mypy checks the whole package: no module excluded or its errors ignored, every
  ``# type: ignore`` names its error code.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

tomllib = pytest.importorskip("tomllib")  # Python 3.11+

REPO = Path(__file__).resolve().parents[1]
PACKAGE = REPO / "server" / "tvm_explorer"
BIN = Path(sys.executable).parent


def _contracts() -> list[dict]:
    with open(REPO / "pyproject.toml", "rb") as fh:
        return tomllib.load(fh)["tool"]["importlinter"]["contracts"]


def test_import_contracts_are_kept():
    proc = subprocess.run(
        [str(BIN / "lint-imports"), "--no-cache"], cwd=REPO, capture_output=True, text=True, timeout=300
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "0 broken" in proc.stdout, proc.stdout


def test_every_room_is_in_a_layer():
    layers = next(c for c in _contracts() if c["type"] == "layers")["layers"]
    in_layers = {room.strip() for layer in layers for room in re.split(r"[|:]", layer)}
    rooms = {p.name for p in PACKAGE.iterdir() if p.is_dir() and (p / "__init__.py").exists()}
    rooms |= {p.stem for p in PACKAGE.glob("*.py") if p.stem not in ("__init__", "__main__")}
    assert rooms == in_layers, f"rooms without a layer: {rooms - in_layers}; layers without a room: {in_layers - rooms}"


SERVE_WITHOUT_TVM = """
import sys
from pathlib import Path

from tvm_explorer.lsp.server import create_server
from tvm_explorer.navigation import hover, provenance, registry

create_server(poll_interval=0)
view = registry.load(Path(sys.argv[1]))
answered = 0
for doc in view.bundle.documents:
    text = view.bundle.text(doc.path)
    for offset in range(0, len(text), max(1, len(text) // 40)):
        answered += hover.hover(view, doc.path, offset) is not None
        provenance.definition(view, doc.path, offset)
view.layer_map
assert answered, "no hover answered"
loaded = sorted(m for m in sys.modules if m == "tvm" or m.startswith("tvm."))
print("TVM MODULES:", loaded)
"""


def test_serving_a_bundle_imports_no_tvm(bundles, gt_model):
    bundle = bundles.get(gt_model, "c")
    proc = subprocess.run(
        [sys.executable, "-c", SERVE_WITHOUT_TVM, str(bundle)], capture_output=True, text=True, timeout=300
    )
    assert proc.returncode == 0, proc.stderr
    assert "TVM MODULES: []" in proc.stdout, proc.stdout


def test_the_model_kind_is_decided_in_frontends_only():
    kind_branch = re.compile(r"""(kind\s*[!=]=\s*["'](tflite|onnx|torch)["'])|(["'](tflite|onnx|torch)["']\s*[!=]=)""")
    found = [
        f"{p.relative_to(PACKAGE)}:{i}: {line.strip()}"
        for p in PACKAGE.rglob("*.py")
        if "frontends" not in p.relative_to(PACKAGE).parts
        for i, line in enumerate(p.read_text().splitlines(), 1)
        if kind_branch.search(line)
    ]
    assert not found, "decide through frontends.frontend_of/frontend_for:\n" + "\n".join(found)


def test_the_version_is_written_once():
    from tvm_explorer.version import __version__

    with open(REPO / "pyproject.toml", "rb") as fh:
        project = tomllib.load(fh)["project"]
    assert "version" not in project and "version" in project["dynamic"]
    from importlib.metadata import version

    assert version("tvm-explorer") == __version__
    assert json.loads((REPO / "vscode-extension" / "package.json").read_text())["version"] == __version__
    assert f"## {__version__}" in (REPO / "CHANGELOG.md").read_text()


def test_docs_describe_every_room_and_contract():
    doc = (REPO / "docs" / "architecture.md").read_text()
    layers = next(c for c in _contracts() if c["type"] == "layers")["layers"]
    for room in {room.strip() for layer in layers for room in re.split(r"[|:]", layer)}:
        assert f"`{room}`" in doc or f"`{room}/`" in doc, f"docs/architecture.md does not describe {room}"
    for contract in _contracts():
        assert contract["name"] in doc, f"docs/architecture.md does not name the contract {contract['name']!r}"


def test_mypy_ignores_no_module():
    with open(REPO / "pyproject.toml", "rb") as fh:
        config = tomllib.load(fh)["tool"]["mypy"]
    assert config["files"] == ["server/tvm_explorer"] and "exclude" not in config
    assert config.get("check_untyped_defs") and not config.get("ignore_errors")
    lax = [
        o["module"] for o in config.get("overrides", ()) if o.get("ignore_errors") or o.get("follow_imports") == "skip"
    ]
    assert not lax, f"pyproject.toml keeps mypy from checking {lax}"
    bare = re.compile(r"#\s*type:\s*ignore(?!\[)|#\s*mypy:\s*ignore-errors")
    found = [
        f"{p.relative_to(PACKAGE)}:{i}: {line.strip()}"
        for p in PACKAGE.rglob("*.py")
        for i, line in enumerate(p.read_text().splitlines(), 1)
        if bare.search(line)
    ]
    assert not found, "a type: ignore names its code ([attr-defined]) and says why:\n" + "\n".join(found)


@pytest.mark.parametrize("kind", ["tflite", "onnx", "torch"])
def test_each_model_kind_is_one_frontend(kind):
    from tvm_explorer.frontends import FRONTENDS, frontend_for

    frontend = next(f for f in FRONTENDS if f.kind == kind)
    assert frontend_for(f"model{frontend.suffix}") is frontend
    assert (PACKAGE / "frontends" / kind / "__init__.py").read_text().count("FRONTEND = Frontend(") == 1

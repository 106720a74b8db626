"""Issue 18: the server started the way the extension starts it imports nothing from the
workspace. The spawn specification is the extension's own code (vscode-extension/src/
serverProcess.ts, built with esbuild and run under Node), not a copy of it."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from .hostile import RawServer

REPO = Path(__file__).resolve().parents[2]
ESBUILD = REPO / "node_modules" / ".bin" / "esbuild"


def _planted_workspace(tmp_path: Path) -> tuple[Path, Path]:
    ws = tmp_path / "ws"
    marker = tmp_path / "PLANTED-CODE-RAN"
    pkg = ws / "tvm_explorer"
    pkg.mkdir(parents=True)
    plant = f"open({str(marker)!r}, 'w').write('ran')\n"
    (pkg / "__init__.py").write_text(plant)
    (pkg / "__main__.py").write_text(plant)
    return ws, marker


def _extension_spawn(tmp_path: Path, cwd: Path) -> dict:
    """``serverProcess(python, args)`` of the extension, evaluated by Node in ``cwd``."""
    if not shutil.which("node") or not ESBUILD.exists():
        pytest.skip("node or esbuild not installed")
    out = tmp_path / "serverProcess.js"
    subprocess.run([str(ESBUILD), str(REPO / "vscode-extension/src/serverProcess.ts"), "--bundle",
                    "--platform=node", "--format=cjs", f"--outfile={out}", "--log-level=warning"],
                   check=True, timeout=60)
    script = (f"const m = require({json.dumps(str(out))});"
              f"console.log(JSON.stringify(m.serverProcess({json.dumps(sys.executable)},"
              f" ['-m', 'tvm_explorer', 'serve'])));")
    got = subprocess.run(["node", "-e", script], cwd=cwd, capture_output=True, text=True,
                         check=True, timeout=60)
    return json.loads(got.stdout)


def _serve(spec: dict, env: dict, cwd: str) -> dict:
    srv = RawServer(cmd=[spec["command"], *spec["args"]], cwd=cwd, env=env)
    try:
        return srv.initialize()
    finally:
        srv.close()


def test_planted_package_in_the_workspace_is_not_imported(tmp_path):
    ws, marker = _planted_workspace(tmp_path)
    spec = _extension_spawn(tmp_path, cwd=ws)
    cwd = spec["options"]["cwd"]
    assert Path(cwd).resolve() != ws.resolve() and not Path(cwd).resolve().is_relative_to(ws.resolve())
    assert os.stat(cwd).st_mode & 0o077 == 0  # private to the user
    got = _serve(spec, spec["options"]["env"], cwd)
    assert got["result"]["serverInfo"]["name"] == "tvm-explorer"
    assert not marker.exists(), "the server imported tvm_explorer from the workspace"
    # The control: started in the workspace as before, the planted package runs (so the
    # check above can fail).
    env = {k: v for k, v in os.environ.items() if k != "PYTHONSAFEPATH"}
    subprocess.run([spec["command"], *spec["args"]], cwd=ws, env=env, stdin=subprocess.DEVNULL,
                   capture_output=True, timeout=60)
    assert marker.exists()

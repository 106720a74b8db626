"""Issue 18: the server started the way the extension starts it imports nothing from the
workspace. The spawn specification is the extension's own code (vscode-extension/src/
serverProcess.ts, built with esbuild and run under Node), not a copy of it.

Issue 26: nor does any other launch the docs name (the console script, Neovim's configs), nor
any child process (the index worker of a >= 1 MiB index.json, the profiling process), run
inside a bundle, a workspace or a working directory holding a planted ``tvm_explorer/``."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tvm_explorer.bundle import index_load
from tvm_explorer.supervise.child_python import python_module_command

from .hostile import RawServer, console_script, documented_server_launches, pad_index, plant_package

REPO = Path(__file__).resolve().parents[2]
ESBUILD = REPO / "node_modules" / ".bin" / "esbuild"


def _planted_workspace(tmp_path: Path) -> tuple[Path, Path]:
    ws = tmp_path / "ws"
    marker = tmp_path / "PLANTED-CODE-RAN"
    plant_package(ws, marker)
    return ws, marker


def _extension_spawn(tmp_path: Path, cwd: Path) -> dict:
    """``serverProcess(python, args)`` of the extension, evaluated by Node in ``cwd``."""
    if not shutil.which("node") or not ESBUILD.exists():
        pytest.skip("node or esbuild not installed")
    out = tmp_path / "serverProcess.js"
    subprocess.run(
        [
            str(ESBUILD),
            str(REPO / "vscode-extension/src/serverProcess.ts"),
            "--bundle",
            "--platform=node",
            "--format=cjs",
            f"--outfile={out}",
            "--log-level=warning",
        ],
        check=True,
        timeout=60,
    )
    script = (
        f"const m = require({json.dumps(str(out))});"
        f"console.log(JSON.stringify(m.serverProcess({json.dumps(sys.executable)},"
        f" ['-m', 'tvm_explorer', 'serve'])));"
    )
    got = subprocess.run(["node", "-e", script], cwd=cwd, capture_output=True, text=True, check=True, timeout=60)
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
    subprocess.run(
        [spec["command"], *spec["args"]], cwd=ws, env=env, stdin=subprocess.DEVNULL, capture_output=True, timeout=60
    )
    assert marker.exists()


def _no_safe_path_env() -> dict:
    """This environment without PYTHONSAFEPATH (as a user's shell usually is)."""
    return {k: v for k, v in os.environ.items() if k != "PYTHONSAFEPATH"}


@pytest.fixture
def big_bundle(gt_model, bundles, tmp_path) -> tuple[Path, Path]:
    """A workspace ``ws`` holding a real bundle whose index.json a worker parses, with a
    ``tvm_explorer/`` planted in the workspace and in the bundle; and the marker it writes."""
    ws, marker = _planted_workspace(tmp_path)
    bundle = ws / "gt.bundle"
    shutil.copytree(bundles.get(gt_model, "c"), bundle)
    pad_index(bundle, index_load.WORKER_MIN_BYTES)
    plant_package(bundle, marker)
    return bundle, marker


def test_docs_name_only_immune_server_launches(tmp_path):
    launches = documented_server_launches(REPO)
    assert len(launches) >= 3, launches  # README, Neovim 0.11 and the lspconfig variant
    ws, marker = _planted_workspace(tmp_path)
    for cmd in launches:
        srv = RawServer(cmd=cmd, cwd=ws, env=_no_safe_path_env())
        try:
            got = srv.initialize(ws)
            assert got["result"]["serverInfo"]["name"] == "tvm-explorer", (cmd, got)
        finally:
            srv.close()
        assert not marker.exists(), f"{cmd} imported tvm_explorer from its working directory"


def test_cli_in_a_bundle_with_a_large_index_runs_nothing_of_it(big_bundle):
    bundle, marker = big_bundle
    for cmd in ([str(console_script())], python_module_command("tvm_explorer")):  # what the docs allow as python -P -m
        proc = subprocess.run(
            [*cmd, "coverage", "."], cwd=bundle, capture_output=True, text=True, timeout=300, env=_no_safe_path_env()
        )
        assert proc.returncode == 0 and "import" in proc.stdout, proc.stderr
        assert not marker.exists(), f"{cmd} coverage . ran the bundle's tvm_explorer/"


def test_index_worker_started_in_a_bundle_imports_the_installed_package(big_bundle, monkeypatch):
    bundle, marker = big_bundle
    monkeypatch.chdir(bundle)
    monkeypatch.delenv("PYTHONSAFEPATH", raising=False)
    data = (bundle / "index.json").read_bytes()
    # None would mean the worker failed (e.g. it found the plant, which has no bundle module).
    assert index_load._parse_in_worker(data, bundle / "index.json") is not None
    assert not marker.exists()


def test_server_in_a_workspace_with_a_large_index_runs_nothing_of_it(big_bundle):
    bundle, marker = big_bundle
    ws = bundle.parent
    srv = RawServer(cmd=[str(console_script()), "serve"], cwd=ws, env=_no_safe_path_env())
    try:
        srv.initialize(ws)
        got = srv.wait_bundles(1, timeout=120)
        assert got[0].get("error") in (None, ""), got
    finally:
        srv.close()
    assert not marker.exists(), "the index worker imported tvm_explorer from the workspace"


@pytest.mark.parametrize("safe_path_flag", [True, False], ids=["-P", "3.10 bootstrap"])
def test_child_command_keeps_the_working_directory_off_sys_path(tmp_path, safe_path_flag):
    ws, marker = _planted_workspace(tmp_path)
    plant_package(ws, marker, "json")  # the bootstrap itself imports runpy (and so much else)
    cmd = python_module_command(
        "tvm_explorer.child_python_probe", "a b", "--x", site=False, safe_path_flag=safe_path_flag
    )
    probe = tmp_path / "probe" / "tvm_explorer"
    probe.mkdir(parents=True)
    (probe / "__init__.py").write_text("")
    (probe / "child_python_probe.py").write_text(
        "import json, sys\nprint(json.dumps({'argv': sys.argv, 'path': sys.path}))\n"
    )
    env = {**_no_safe_path_env(), "PYTHONPATH": str(probe.parent)}
    proc = subprocess.run(cmd, cwd=ws, env=env, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    got = json.loads(proc.stdout)
    assert got["argv"][1:] == ["a b", "--x"] and got["argv"][0].endswith("child_python_probe.py")
    assert "" not in got["path"] and str(ws) not in got["path"], got["path"]
    assert got["path"][0] == str(probe.parent)
    assert not marker.exists()

"""A Neovim user's view: Debian's Neovim (0.7) runs headless with no config, starts the server
through its built-in LSP client (vim.lsp.start_client) and asks definition on a Relax variable
use and declaration from a C conv line (vim.lsp.buf_request_sync), with the server command
docs/vscode.md gives (a tvm_explorer/ planted in nvim's directory must not run). Skipped only
where nvim is not installed, outside CI."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from tvm_explorer.bundle.reader import Bundle

from .hostile import documented_server_launches, plant_package
from .test_ir_navigation import fuse_ops_doc, main_body, pos
from .test_stage_jumps import C_ACCUMULATE, conv_update

REPO = Path(__file__).resolve().parents[2]
SCRIPT = REPO / "tests" / "neovim" / "lsp_queries.lua"


def _nvim() -> str:
    found = shutil.which("nvim")
    if found is None:
        if os.environ.get("CI"):
            pytest.fail("nvim is not installed (scripts/setup-e2e.sh installs Debian's neovim)")
        pytest.skip("nvim is not installed")
    return found


def _text_at(bundle: Bundle, loc: dict) -> tuple[str, str]:
    rel = loc["uri"].split(f"/{bundle.root.name}/", 1)[1]
    lines = bundle.text(rel).split("\n")
    start, end = loc["range"]["start"], loc["range"]["end"]
    if start["line"] == end["line"]:
        return rel, lines[start["line"]][start["character"] : end["character"]]
    return rel, lines[start["line"]][start["character"] :]


def test_neovim_definition_and_declaration(real_workspace, tmp_path):
    nvim = _nvim()
    bundle = Bundle(real_workspace["bundles"]["small_cnn_fp32"])
    fuse = fuse_ops_doc(bundle)
    relax = bundle.text(fuse)
    lo, hi = main_body(relax)
    use = re.compile(r"= fused_conv2d1\w*\((\w+),").search(relax, lo, hi)
    c_text = bundle.text("code/module.c")
    store = conv_update(c_text, "fused_conv2d1_add1_relu1", "int32_t __tvm_ffi_{func}(", C_ACCUMULATE)
    last_relax = [d.path for d in bundle.documents if d.stage == "relax"][-1]
    call = bundle.text(last_relax).index("fused_conv2d1_add1_relu1(alloc")
    queries = [
        ("textDocument/definition", fuse, pos(relax, use.start(1))),
        ("textDocument/declaration", "code/module.c", pos(c_text, store)),
        ("textDocument/declaration", last_relax, pos(bundle.text(last_relax), call)),
    ]
    # The command docs/vscode.md gives Neovim users, started (Neovim 0.7: in nvim's working
    # directory) where a tvm_explorer/ is planted: it must not run (issue 26).
    neovim_cmd = next(c for c in documented_server_launches(REPO) if c[-1] == "serve")
    marker = tmp_path / "PLANTED-CODE-RAN"
    plant_package(tmp_path, marker)
    spec = tmp_path / "queries.json"
    spec.write_text(
        json.dumps(
            {
                "cmd": neovim_cmd,
                "root": str(real_workspace["folder"]),
                "queries": [
                    {"method": m, "file": str(bundle.root / f), "line": p.line, "character": p.character}
                    for m, f, p in queries
                ],
            }
        )
    )
    out = tmp_path / "results.json"
    proc = subprocess.run(
        [nvim, "--headless", "-u", "NONE", "-i", "NONE", "-c", f"luafile {SCRIPT}"],
        env={**os.environ, "TVMX_QUERIES": str(spec), "TVMX_RESULTS": str(out)},
        capture_output=True,
        text=True,
        timeout=300,
        cwd=tmp_path,
    )
    assert out.exists(), f"nvim wrote no results:\n{proc.stdout}\n{proc.stderr}"
    results = json.loads(out.read_text())
    assert isinstance(results, list), results
    definition, to_tir, to_model = [r["result"] for r in results]
    rel, got = _text_at(bundle, definition[0])
    assert rel == fuse and re.match(rf"{use.group(1)}(: [^\n]*?)? = R\.call_tir\(max_pool2d,", got), got
    rel, got = _text_at(bundle, to_tir[0])
    assert rel == [d.path for d in bundle.documents if d.stage == "tir"][-1]
    assert got.startswith(c_text[store:].split("[", 1)[0] + "[")
    rel, got = _text_at(bundle, to_model[0])
    assert rel == "model.tflgraph" and got.startswith("op 2 CONV_2D")
    assert not marker.exists(), f"{neovim_cmd} imported tvm_explorer from nvim's directory"

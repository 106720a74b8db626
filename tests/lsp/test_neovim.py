"""The same server from another editor: headless Neovim (Debian's 0.7, its built-in LSP client
via ``vim.lsp.start_client`` and ``vim.lsp.buf_request_sync``) asks for definition on a Relax
variable *use* (→ its binding) and for declaration on a generated-C convolution store (→ the
final TIR, one stage back), on a real compiled bundle."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys

import pytest

from tvm_explorer.bundle.reader import Bundle

NVIM = shutil.which("nvim")
pytestmark = pytest.mark.skipif(NVIM is None and not __import__("os").environ.get("CI"),
                                reason="nvim not installed (scripts/setup-e2e.sh installs it)")

LUA = r"""
local args = vim.fn.json_decode(vim.fn.readfile(vim.env.TVMX_ARGS)[1])
local out = {}
local client_id = vim.lsp.start_client({
  name = 'tvm_explorer',
  cmd = args.cmd,
  root_dir = args.root,
  workspace_folders = { { uri = vim.uri_from_fname(args.root), name = 'ws' } },
})
local function ask(item)
  vim.cmd('edit ' .. vim.fn.fnameescape(item.file))
  local bufnr = vim.api.nvim_get_current_buf()
  vim.lsp.buf_attach_client(bufnr, client_id)
  local params = { textDocument = { uri = vim.uri_from_bufnr(bufnr) },
                   position = { line = item.line, character = item.character } }
  local result
  -- The first answers may come while the server still loads the bundle: ask until found.
  for _ = 1, 60 do
    local responses = vim.lsp.buf_request_sync(bufnr, item.method, params, 20000) or {}
    for _, r in pairs(responses) do
      if r.result and not vim.tbl_isempty(r.result) then result = r.result end
    end
    if result then break end
    vim.wait(500)
  end
  if result and result.uri then result = { result } end
  return result or {}
end
vim.wait(60000, function()
  local c = vim.lsp.get_client_by_id(client_id)
  return c ~= nil and c.initialized
end)
for _, item in ipairs(args.asks) do table.insert(out, ask(item)) end
vim.fn.writefile({ vim.fn.json_encode(out) }, vim.env.TVMX_OUT)
vim.lsp.stop_client(client_id)
vim.wait(5000, function() return vim.lsp.get_client_by_id(client_id) == nil end)
vim.cmd('qall!')
"""


def _position(text: str, offset: int) -> dict:
    line = text.count("\n", 0, offset)
    return {"line": line, "character": offset - (text.rfind("\n", 0, offset) + 1)}


def _landing(bundle: Bundle, loc: dict) -> tuple[str, str]:
    rel = loc["uri"].split(bundle.root.name + "/", 1)[1]
    line = bundle.text(rel).split("\n")[loc["range"]["start"]["line"]]
    return rel, line[loc["range"]["start"]["character"]:]


def test_neovim_definition_on_a_use_and_declaration(real_workspace, tmp_path):
    assert NVIM, "nvim not installed"
    bundle = Bundle(real_workspace["bundles"]["small_cnn_fp32"])
    # A Relax variable passed to the fused conv in FuseOps' main: its use.
    fuse = next(d.path for d in bundle.documents if d.path.endswith("-FuseOps.relax"))
    ftext = bundle.text(fuse)
    main = ftext.index("    def main(")
    use = re.compile(r"= (fused_conv2d1\w*)\((\w+),").search(ftext, main)
    # The accumulation store of the second conv in the generated C.
    ctext = bundle.text("code/module.c")
    body = ctext.rindex("int32_t __tvm_ffi_fused_conv2d1_add1_relu1(")
    store = re.compile(r"\n\s+((\w+)\[[^\n]*\] = \(?\2\[[^\n]*\*)").search(ctext, body)
    asks = [
        {"method": "textDocument/definition", "file": str(bundle.root / fuse),
         **_position(ftext, use.start(2) + 1)},
        {"method": "textDocument/declaration", "file": str(bundle.root / "code/module.c"),
         **_position(ctext, store.start(1))},
    ]
    args = tmp_path / "args.json"
    args.write_text(json.dumps({"cmd": [sys.executable, "-m", "tvm_explorer", "serve"],
                                "root": str(real_workspace["folder"]), "asks": asks}))
    script = tmp_path / "ask.lua"
    script.write_text(LUA)
    out = tmp_path / "out.json"
    proc = subprocess.run(
        [NVIM, "--headless", "-u", "NONE", "-i", "NONE", "-n", "-c", f"luafile {script}"],
        env={**__import__("os").environ, "TVMX_ARGS": str(args), "TVMX_OUT": str(out),
             "XDG_STATE_HOME": str(tmp_path), "XDG_CACHE_HOME": str(tmp_path)},
        capture_output=True, text=True, timeout=300, stdin=subprocess.DEVNULL,
    )
    assert out.exists(), f"nvim wrote no answers (exit {proc.returncode}):\n{proc.stdout}\n{proc.stderr}"
    definition, declaration = json.loads(out.read_text())
    # Definition on the use: the binding of that variable, earlier in the same document.
    assert len(definition) == 1, definition
    rel, text = _landing(bundle, definition[0])
    assert rel == fuse
    assert re.match(rf"{use.group(2)}(: [^\n]*?)? = R\.call_tir\(", text), text
    assert definition[0]["range"]["start"]["line"] < _position(ftext, use.start(2))["line"]
    # Declaration on the C store: one stage back, the final TIR document.
    assert declaration, "declaration answered nothing"
    tir = [d.path for d in bundle.documents if d.stage == "tir"][-1]
    assert {_landing(bundle, loc)[0] for loc in declaration} == {tir}

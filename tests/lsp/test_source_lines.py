"""Definition and hover from generated C of a PyTorch program to the user's forward() line
(real server process over stdio; a real bundle compiled from a .pt2)."""

from __future__ import annotations

import re

import pytest
import pytest_lsp
from lsprotocol import types
from pytest_lsp import LanguageClient

from tvm_explorer.bundle.reader import Bundle

from .conftest import SERVER, compile_bundle, start_session, uri

torch = pytest.importorskip("torch", reason="PyTorch is not installed (pip install -e '.[torch]')")

from frontends import torch_nets  # noqa: E402


@pytest.fixture(scope="module")
def torch_workspace(tmp_path_factory) -> dict:
    folder = tmp_path_factory.mktemp("torch-ws")
    ep, _ = torch_nets.resnet_program()
    torch.export.save(ep, folder / "resnet.pt2")
    (folder / "bundles").mkdir()
    bundle = compile_bundle(folder / "resnet.pt2", folder / "bundles" / "resnet")
    return {"folder": folder, "bundle": Bundle(bundle)}


@pytest_lsp.fixture(config=SERVER, scope="module")
async def client(lsp_client: LanguageClient, torch_workspace):
    await start_session(lsp_client, torch_workspace["folder"], expect=1)
    yield
    await lsp_client.shutdown_session()


def _relu_position(bundle: Bundle) -> types.Position:
    text = bundle.text("code/module.c")
    lines = text.split("\n")
    n = next(i for i, line in enumerate(lines) if re.search(r"\) > \(0\.0+e\+00f\)", line))
    return types.Position(n, len(lines[n]) - len(lines[n].lstrip()))


async def test_definition_from_c_reaches_model_entry_and_forward_line(client, torch_workspace):
    bundle = torch_workspace["bundle"]
    doc = types.TextDocumentIdentifier(uri(bundle.root / "code" / "module.c"))
    found = await client.text_document_definition_async(types.DefinitionParams(doc, _relu_position(bundle)))
    model = [loc for loc in found if loc.uri.endswith("/model.fxgraph")]
    source = [loc for loc in found if loc.uri.endswith(".py")]
    assert model, found
    # the innermost line first, then the model entries, then the callers (ResNet.forward's
    # lines: the kernel serves block1.act and block2.act)
    assert found[0] == source[0] and {loc.uri for loc in source} == {uri(torch_nets.__file__)}
    assert [loc.range.start.line + 1 for loc in source] == [torch_nets.LINES["block.relu"], 39, 40]
    line = source[0].range.start.line
    assert line + 1 == torch_nets.LINES["block.relu"]
    text = open(torch_nets.__file__).read().split("\n")[line]
    assert text[source[0].range.start.character : source[0].range.end.character] == "y = self.act(y)  # line 22"


async def test_hover_names_module_class_and_line(client, torch_workspace):
    bundle = torch_workspace["bundle"]
    doc = types.TextDocumentIdentifier(uri(bundle.root / "code" / "module.c"))
    hover = await client.text_document_hover_async(types.HoverParams(doc, _relu_position(bundle)))
    assert "block1.act (ReLU) — torch_nets.py:22" in hover.contents.value.replace("\\", "")  # escaped Markdown

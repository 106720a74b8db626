"""A layer the fused numerics build cannot observe (conv and add fused into one kernel with the
relu) says which fused kernel hid it, with which layers, and suggests ``--numerics-unfused``
(``tvmExplorer/numerics``'s ``hint``, the Numerics view's tooltip). Real compile, real server."""

from __future__ import annotations

from pathlib import Path

import pytest
from pytest_lsp import LanguageClient
from tests.conftest import run_cli

from tvm_explorer.bundle.reader import Bundle

from .conftest import uri, workspace_client


@pytest.fixture(scope="module")
def workspace(tmp_path_factory, gt_model) -> Path:
    root = tmp_path_factory.mktemp("numerics-hidden-ws")
    run_cli("compile", str(gt_model), "-o", str(root / "fused"), "--target", "c", "--numerics", check=True, timeout=900)
    return root


client = workspace_client()


async def test_unobserved_layer_names_the_fused_kernel_and_the_unfused_option(client: LanguageClient, workspace):
    bundle = Bundle(workspace / "fused")
    result = await client.protocol.send_request_async("tvmExplorer/numerics", {"bundle": uri(bundle.root)})
    assert result.mode == "fused"
    layers = {layer.op_index: layer for layer in result.layers}
    hidden = [layer for layer in result.layers if not layer.observed]
    assert [layer.opcode for layer in hidden] == ["CONV_2D", "ADD"]
    conv = layers[0]
    assert "fused kernel fused_conv2d_add_add_relu" in conv.hint, conv.hint
    assert "with op 1 ADD, op 2 RELU" in conv.hint and "--numerics-unfused" in conv.hint
    assert "with op 0 CONV_2D, op 2 RELU" in layers[1].hint
    # the kernel named is one of the generated code
    assert "fused_conv2d_add_add_relu(" in bundle.text("code/module.c")
    assert all(layer.hint is None for layer in result.layers if layer.observed)

"""Go to definition from a fused kernel (CONV_2D, ADD and RELU of the ground-truth model in one
PrimFunc): a statement goes to its own layer only; a line of the kernel itself goes to every
layer the kernel computes, the layers it produces first. The peek carries no labels, so the
model entry's hover says which other layers share its kernel ("shared with op 0 CONV_2D, op 2
RELU"). A kernel serving two identical layers (conv → relu twice) goes to both convs. Real
compiles, real server."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from lsprotocol import types
from pytest_lsp import LanguageClient
from tests.conftest import run_cli
from tests.tflite_builder import GraphBuilder

from tvm_explorer.bundle.reader import Bundle

from .conftest import workspace_client
from .real import landing, pos, td


@pytest.fixture(scope="module")
def workspace(tmp_path_factory, gt_model) -> Path:
    root = tmp_path_factory.mktemp("shared-kernel-ws")
    (root / "bundles").mkdir()
    twin = root / "twin.tflite"
    twin.write_bytes(_twin_model())
    for model, name in ((gt_model, "gt"), (twin, "twin")):
        run_cli("compile", str(model), "-o", str(root / "bundles" / name), "--target", "c", check=True, timeout=900)
    return root / "bundles"


def _twin_model() -> bytes:
    """conv → relu → conv → relu, the two blocks alike: TVM makes one PrimFunc for both."""
    g = GraphBuilder(seed=0)
    y = g.input("input", [1, 8, 8, 4])
    for block in ("first", "second"):
        y = g.conv2d(y, filters=4, kernel=3, name=f"{block}/conv", padding="SAME")
        y = g.relu(y, name=f"{block}/relu")
    g.output(y)
    return g.build()


client = workspace_client(expect=2)


KERNEL = "fused_conv2d_add_add_relu"


def kernel_body(text: str) -> int:
    return text.index(f"int32_t __tvm_ffi_{KERNEL}(void* self_handle, void* args, int32_t num_args, void* result) {{")


async def definition(client, bundle, path, offset):
    text = bundle.text(path)
    got = await client.text_document_definition_async(types.DefinitionParams(td(bundle, path), pos(text, offset)))
    return [landing(bundle, loc)[2].split("  ")[0] for loc in got]


async def test_a_statement_of_the_fused_kernel_goes_to_its_own_layer_only(client: LanguageClient, workspace):
    bundle = Bundle(workspace / "gt")
    text = bundle.text("code/module.c")
    relu = re.compile(r"compute_intermediate\[cse_v\d+\] = \(\(v_\)").search(text, kernel_body(text))
    assert await definition(client, bundle, "code/module.c", relu.start()) == ["op 2 RELU"]


async def test_a_kernel_line_lists_every_layer_it_computes(client: LanguageClient, workspace):
    bundle = Bundle(workspace / "gt")
    text = bundle.text("code/module.c")
    header = kernel_body(text) + len("int32_t __tvm_ffi_")
    # each location lands on its own layer's entry (the peek's preview names the layer)
    assert await definition(client, bundle, "code/module.c", header) == ["op 0 CONV_2D", "op 1 ADD", "op 2 RELU"]


async def test_the_model_entry_hover_says_which_layers_share_its_kernel(client: LanguageClient, workspace):
    bundle = Bundle(workspace / "gt")
    model = bundle.text("model.tflgraph")
    got = await client.text_document_hover_async(
        types.HoverParams(td(bundle, "model.tflgraph"), pos(model, model.index("op 1 ADD")))
    )
    value = got.contents.value.replace("\\", "")
    assert f"Computed in PrimFunc `{KERNEL}`, shared with op 0 CONV_2D, op 2 RELU." in value, value
    # a layer alone in its kernel says nothing of the kind
    alone = await client.text_document_hover_async(
        types.HoverParams(td(bundle, "model.tflgraph"), pos(model, model.index("op 4 FULLY_CONNECTED")))
    )
    assert "shared with" not in alone.contents.value, alone.contents.value


async def test_a_kernel_serving_two_identical_layers_goes_to_both(client: LanguageClient, workspace):
    bundle = Bundle(workspace / "twin")
    text = bundle.text("code/module.c")
    body = text.index(
        "int32_t __tvm_ffi_fused_conv2d_add_relu(void* self_handle, void* args, int32_t num_args, void* result) {"
    )
    accumulate = re.compile(r"conv2d_nhwc_intermediate\[cse_v\d+\] = \(conv2d_nhwc_intermediate").search(text, body)
    assert await definition(client, bundle, "code/module.c", accumulate.start()) == ["op 0 CONV_2D", "op 2 CONV_2D"]
    model = bundle.text("model.tflgraph")
    got = await client.text_document_hover_async(
        types.HoverParams(td(bundle, "model.tflgraph"), pos(model, model.index("op 2 CONV_2D")))
    )
    value = got.contents.value.replace("\\", "")
    assert "Computed in PrimFunc `fused_conv2d_add_relu`, shared with op 0 CONV_2D, op 1 RELU, op 3 RELU." in value, (
        value
    )

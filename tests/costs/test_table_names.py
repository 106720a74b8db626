"""Layer names in the CLI tables (costs, numerics, compare): a converter's shared scope
(``mobilenet_1.00_224_1/mobilenet_1.00_224_1/…``) must not fill the column so that every row
reads the same; names are shortened from the left and stay distinct."""

from __future__ import annotations

import re

import pytest
from tests.conftest import MODELS, run_cli

from tvm_explorer.frontends import load_any
from tvm_explorer.tablenames import NameColumn

MOBILENET = MODELS / "mobilenet_v1_fp32.tflite"
SCOPE = "mobilenet_1.00_224_1/mobilenet_1.00_224_1/"


def _rows_with(text: str, pattern: str) -> list[str]:
    return [line for line in text.splitlines() if re.search(pattern, line)]


def test_costs_table_drops_the_shared_scope(bundles):
    out = run_cli("costs", bundles.get(MOBILENET, "c"), check=True).stdout
    assert f"leave out their shared scope {SCOPE}" in out, out
    rows = _rows_with(out, r"^\s+\d+\s+op \d+ ")
    assert len(rows) == 30 and not any("mobilenet_1.00_224_1/" in row for row in rows), out
    assert any(re.search(r"op \d+ DEPTHWISE_CONV_2D conv_dw_13_1\s", row) for row in rows), out


def test_compare_table_drops_the_shared_scope(bundles):
    a = bundles.get(MOBILENET, "c")
    out = run_cli("compare", a, a, check=True).stdout
    assert f"leave out their shared scope {SCOPE}" in out, out
    rows = _rows_with(out, r"^\s*\d+\s+(CONV_2D|DEPTHWISE_CONV_2D)\s")
    assert rows and all(" conv" in row for row in rows), out
    names = [row.split()[2] for row in rows]
    assert len(set(names)) == len(names) and "conv_pw_13_1" in names


@pytest.mark.slow
def test_numerics_table_drops_the_shared_scope(bundles):
    # The session's compile: tests/numerics/test_numerics.py reads the same bundle.
    text = run_cli("numerics", bundles.get(MOBILENET, "llvm", "--numerics"), check=True).stdout
    assert f"leave out their shared scope {SCOPE}" in text, text
    rows = _rows_with(text, r"^..\s*\d+\s+(CONV_2D|DEPTHWISE_CONV_2D)\s")
    names = [row[2:].split()[2] for row in rows]
    assert len(rows) == 28 and len(set(names)) == 28 and "conv_dw_13_1" in names, text


@pytest.mark.parametrize(
    "model",
    [
        "pose_detection.tflite",
        "tiny_transformer_fp32.tflite",
        "text_lstm_fp32.tflite",
        "mobilenet_v3_small_int8.tflite",
    ],
)
def test_shortened_names_of_real_models_stay_distinct(model):
    names = [lay.name for lay in load_any(MODELS / model).layers]
    column = NameColumn(names, 40)
    shown = {column.show(n) for n in set(names)}
    assert len(shown) == len(set(names))
    assert all(len(s) <= 40 for s in shown)
    assert any(len(n) > 40 for n in names)  # the model does need shortening


def test_pytorch_module_paths_keep_their_inner_modules():
    """A PyTorch name is ``module.path/node``: cut at a ``.`` of the path, not to ``…/mm_6``;
    the dots inside a TF scope's ``1.00_224`` are not boundaries."""
    from tvm_explorer.tablenames import shorten

    assert shorten("m.model.layers.0.mlp.down_proj/mm_6", 31) == "….layers.0.mlp.down_proj/mm_6"
    assert shorten("m.model.layers.11.self_attn.q_proj/mm", 24) == "….11.self_attn.q_proj/mm"
    assert shorten("mobilenetv2_1.00_224/block_1_expand/Conv2D", 30) == "…/block_1_expand/Conv2D"

"""--numerics on a real int8 model (mobilenet_v3_small_int8): the fused build keeps the output
marks of quantized layers and reads their int8 outputs back from the dequantized results of
their kernels; a faithful compile is judged against LiteRT's own engine-to-engine spread and
reports no divergence; a planted fault is found first, at its layer."""

from __future__ import annotations

import json

import pytest
from tests.conftest import MODELS, run_cli

from .planted import planted_int8_bias

MODEL = MODELS / "mobilenet_v3_small_int8.tflite"
LOST = "origin mark was lost"


@pytest.fixture(scope="module")
def numerics(bundles):
    bundle = bundles.get(MODEL, "llvm", "--numerics", "--numerics-unfused")
    return json.loads((bundle / "numerics.json").read_text())


def test_fused_build_observes_quantized_layers_and_loses_no_mark(numerics):
    layers = numerics["layers"]
    fused = [e["fused"] for e in layers]
    observed = [e for e in layers if e["fused"]["observed"]]
    # Every layer is observed or hidden inside a named kernel: no mark lost on the way.
    assert not [e["op_index"] for e, f in zip(layers, fused) if LOST in (f["note"] or "")]
    assert all(f["observed"] or f["hidden_in"] for f in fused), \
        [(e["op_index"], f["note"]) for e, f in zip(layers, fused) if not (f["observed"] or f["hidden_in"])]
    assert len(observed) >= 40, len(observed)
    ops = {e["op_index"] for e in observed}
    assert {10, 13, 108} <= ops  # conv10's int8 output read back from its dequantized kernel result
    assert all(e["fused"]["steps"] is not None for e in observed if e["opcode"] == "CONV_2D")
    assert all(e["observed"] for e in layers)  # unfused: every layer


def test_faithful_int8_compile_reports_no_divergence(numerics):
    assert numerics["first_divergence"] is None, numerics["first_divergence"]
    assert numerics["fused_first_divergence"] is None, numerics["fused_first_divergence"]
    layers = {e["op_index"]: e for e in numerics["layers"]}
    # Beyond one step, but within the budget LiteRT's own kernel sets set.
    deep = layers[100]
    assert deep["steps"] > 10 and deep["step_budget"] >= deep["steps"]
    assert layers[0]["step_budget"] == 1.0
    assert numerics["thresholds"]["spread_factor"] == 4.0


def test_planted_int8_fault_is_the_first_divergence(tmp_path):
    reference = planted_int8_bias(MODEL, tmp_path / "planted.tflite", 10, steps=40)
    out = tmp_path / "planted.bundle"
    proc = run_cli("compile", MODEL, "-o", out, "--target", "llvm", "--numerics",
                   "--reference", reference)
    assert proc.returncode == 0, proc.stderr
    data = json.loads((out / "numerics.json").read_text())
    assert data["first_divergence"] == {"subgraph": 0, "op_index": 10}, data["first_divergence"]
    conv = next(e for e in data["layers"] if e["op_index"] == 10)
    assert conv["observed_by"] == "fused" and conv["steps"] > conv["step_budget"]
    assert "first divergence: op 10 CONV_2D MobileNetV3Small_1/MobileNetV3Small_1/expanded_conv_project_1" \
        in proc.stdout

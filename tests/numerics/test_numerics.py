"""compile --numerics: ground truth by construction, real models, bad input.

The planted model is ``conv_add_relu_dense`` (0 CONV_2D, 1 ADD, 2 RELU, 3 RESHAPE,
4 FULLY_CONNECTED) against a reference copy whose ADD bias is changed: the first
divergence must be op 1, and op 0 must match. TVM fuses CONV_2D, ADD and RELU into one
kernel, so only the unfused variant can see op 1 itself.
"""

from __future__ import annotations

import numpy as np
import pytest

from conftest import MODELS, run_cli
from numerics.runs import compile_llvm, layer_entry, numerics_json, planted_divergence, unfused_bundle


@pytest.fixture(scope="module")
def planted_unfused(planted, tmp_path_factory):
    return unfused_bundle(planted, tmp_path_factory.mktemp("nb"))


def test_planted_constant_is_the_first_divergence_in_unfused_mode(planted_unfused):
    # In the normal build the ADD is fused with the conv and the relu: hidden there.
    data = planted_divergence(planted_unfused, 1, "ADD", "add/output")
    conv = layer_entry(data, 0)
    assert conv["observed"] and not conv["diverges"] and conv["max_abs"] < 1e-5
    assert conv["cosine"] > 0.99999
    assert conv["fused"]["observed"] is False
    assert "first divergence: op 1 ADD" in planted_unfused[1]


def test_text_report_marks_the_first_divergence(planted_unfused):
    proc = run_cli("numerics", planted_unfused[0], check=True)
    marked = [line for line in proc.stdout.splitlines() if line.startswith("=>")]
    assert len(marked) == 1 and " ADD " in marked[0] and "DIVERGES" in marked[0]
    assert "First divergence: op 1 ADD add/output" in proc.stdout
    assert "In the normal (fused) build" in proc.stdout


def test_fused_mode_reports_hidden_layers_and_the_first_visible_divergence(planted, tmp_path):
    model, reference = planted
    out = tmp_path / "fused.bundle"
    compile_llvm(model, out, "--numerics", "--reference", reference, check=True)
    data = numerics_json(out)
    assert data["mode"] == "fused" and "fused_first_divergence" not in data
    add = layer_entry(data, 1)
    assert add["observed"] is False and add["hidden_in"] and add["observed_by"] is None
    first = data["first_divergence"]
    assert first is not None and first["op_index"] == 2  # the fused kernel's result: RELU
    relu = layer_entry(data, 2)
    assert relu["observed"] and relu["diverges"] and relu["kernel"] == add["hidden_in"]


def test_unchanged_reference_shows_no_divergence_target_c(gt_model, tmp_path):
    out = tmp_path / "same.bundle"
    run_cli("compile", gt_model, "-o", out, "--target", "c", "--numerics-unfused", check=True)
    data = numerics_json(out)
    assert data["first_divergence"] is None and data["fused_first_divergence"] is None
    assert all(e["observed"] for e in data["layers"])  # every layer seen without fusion
    assert data["inputs"] == "seeded random (seed 0)"


def test_given_inputs_are_used(gt_model, tmp_path):
    x = np.full((1, 8, 8, 3), 0.25, dtype=np.float32)
    npz = tmp_path / "x.npz"
    np.savez(npz, **{"input": x})
    out = tmp_path / "given.bundle"
    compile_llvm(gt_model, out, "--numerics", "--inputs", npz, check=True)
    data = numerics_json(out)
    assert data["inputs"] == str(npz) and data["first_divergence"] is None


@pytest.mark.slow
def test_mobilenet_v1_float_shows_no_divergence(bundles):
    # The session's compile: tests/costs/test_table_names.py reads the same bundle.
    data = numerics_json(bundles.get(MODELS / "mobilenet_v1_fp32.tflite", "llvm", "--numerics"))
    assert data["first_divergence"] is None
    observed = [e for e in data["layers"] if e["observed"]]
    assert len(observed) >= len(data["layers"]) // 2
    assert all(e["cosine"] > 0.9999 for e in observed)


def test_quantized_model_reports_step_errors(tmp_path):
    out = tmp_path / "int8.bundle"
    run_cli(
        "compile", MODELS / "small_cnn_int8.tflite", "-o", out, "--target", "llvm", "--numerics-unfused", check=True
    )
    data = numerics_json(out)
    observed = [e for e in data["layers"] if e["observed"]]
    assert len(observed) == len(data["layers"])
    quantized = [e for e in observed if e["steps"] is not None]
    assert len(quantized) >= 6  # every int8 output is measured in steps
    assert all(e["steps"] <= 1 and not e["diverges"] for e in quantized)
    assert any(e["steps"] == 1 for e in quantized)  # TVM rounds differently here and there
    # the fused build reads int8 outputs back from the dequantized results of their kernels;
    # what it still cannot see is hidden inside a named kernel
    fused = [e["fused"] for e in data["layers"]]
    assert sum(f["observed"] for f in fused) >= 5
    assert all(f["observed"] or f["hidden_in"] for f in fused)


def test_headline_counts_compute_layers_and_folded_constants_apart(tmp_path):
    """Issue 38, item 10: a model's fp16 weights pass through DEQUANTIZE layers the compiler
    folds into constants; they are not compute layers left unobserved."""
    from tests.tflite_builder import GraphBuilder

    g = GraphBuilder(seed=3)
    x = g.input("x", [1, 8, 8, 3])
    g.output(g.conv2d_fp16_weights(x, 4, name="conv"))
    model = tmp_path / "fp16_weights.tflite"
    model.write_bytes(g.build())
    out = tmp_path / "fp16.bundle"
    proc = compile_llvm(model, out, "--numerics", check=True)
    data = numerics_json(out)
    assert [(e["opcode"], e["folded"], e["observed"]) for e in data["layers"]] == [
        ("DEQUANTIZE", True, False),
        ("DEQUANTIZE", True, False),
        ("CONV_2D", False, True),
    ]
    assert "folded into a constant" in layer_entry(data, 0)["note"]
    headline = "1/1 layers observed (2 more folded into constants at compile time, not counted: 2 DEQUANTIZE)"
    assert headline in proc.stdout
    text = run_cli("numerics", out, check=True).stdout
    assert headline in text
    # a float model: the reference has one engine, and the budgets say they are fixed
    assert "budgets: fixed (the reference has one engine)" in text and data["spread_engines"] is None

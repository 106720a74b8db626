"""Open input dimensions on real TVM imports: an import failure inside TVM's per-node ONNX
conversion names the node, its input shapes and the open dimensions, and says how to pin them;
``compile --input-shape`` pins them (ONNX through ``from_onnx(shape_dict=…)``, TFLite through
``shape_signature``), the model document says what was open and what it was pinned to, and
bad values are one message each. The PyTorch case is in test_llm_targets.py (its dynamic
Llama)."""

from __future__ import annotations

import json

import pytest

from conftest import MODELS, run_cli
from frontends.onnx_graphs import maxpool_open_hw, resize_of_unshaped_input, resize_without_scales_or_sizes
from tvm_explorer.errors import ExplorerError, ModelError
from tvm_explorer.frontends import import_any, load_any, pin_inputs, render_document
from tvm_explorer.frontends.input_shapes import parse_input_shape
from tvm_explorer.provenance import OriginTable

SINE = MODELS / "sine_float.tflite"  # input [1,1], shape_signature [-1,1]
SINE_INPUT = "serving_default_dense_input:0"


def _errors(proc) -> list[str]:
    assert "Traceback" not in proc.stderr, proc.stderr
    return [line for line in proc.stderr.splitlines() if line.startswith("tvm-explorer: error:")]


@pytest.fixture(scope="module")
def maxpool(tmp_path_factory):
    path = tmp_path_factory.mktemp("open_dims") / "maxpool.onnx"
    maxpool_open_hw(path)
    return path


def test_a_failure_inside_the_per_node_conversion_names_the_node_and_the_open_dims(maxpool, tmp_path):
    """It said "TVM's ONNX importer failed: int() argument must be … not 'Var'" and no node."""
    proc = run_cli("compile", maxpool, "-o", tmp_path / "m.bundle")
    (message,) = _errors(proc)
    assert proc.returncode == 2 and not (tmp_path / "m.bundle").exists()
    assert "node 2 (MaxPool '/pool') cannot be imported by TVM: int() argument must be" in message, message
    assert "not 'Var'; its inputs: r float32[1,4," in message, message  # the shape it was given
    assert "H and W of input 'x' [1,3,H,W] are open: pin with --input-shape x=1,3,H,W" in message, message


@pytest.mark.parametrize(
    "build, expected",
    [
        (
            resize_of_unshaped_input,
            [
                "node 0 (Resize '/up') cannot be imported by TVM: object of type 'NoneType' has no len()",
                "its inputs: x float32 (no shape)",
                "Input 'x' declares no shape: pin with --input-shape x=D1,D2,…",
            ],
        ),
        (
            resize_without_scales_or_sizes,
            [
                "node 1 (Resize '/up') cannot be imported by TVM: Type <class 'NoneType'> for size",
                "its inputs: r float32[1,3,H,W] (H, W symbolic)",
                "--input-shape x=1,3,H,W",
            ],
        ),
    ],
)
def test_resize_failures_name_the_node(tmp_path, build, expected):
    path = tmp_path / "resize.onnx"
    build(path)
    with pytest.raises(ModelError) as err:
        import_any(load_any(path), OriginTable())
    for text in expected:
        assert text in str(err.value), str(err.value)


def test_a_dynamic_onnx_model_that_fails_on_an_open_dim_compiles_once_pinned(maxpool, tmp_path):
    out = tmp_path / "pinned.bundle"
    proc = run_cli("compile", maxpool, "-o", out, "--input-shape", "x=1,3,64,64", "--numerics")
    assert proc.returncode == 0, proc.stderr
    doc = (out / "model.onnxgraph").read_text()
    assert "input  x float32[1,3,64,64]  (pinned by --input-shape; the model declares [1,3,H,W])" in doc
    assert "output y float32[1,4,32,32]" in doc  # shape inference ran at the pinned sizes
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["options"]["input_shapes"] == {"x": [1, 3, 64, 64]}
    numerics = json.loads((out / "numerics.json").read_text())
    assert numerics["first_divergence"] is None
    assert [e["observed"] for e in numerics["layers"]].count(True) >= 2  # run against onnxruntime
    # without the pin, the model document says which dimensions are open
    unpinned = render_document(load_any(maxpool), OriginTable())[1]
    assert "input  x float32[1,3,H,W]  (H and W open: --input-shape pins them)" in unpinned


def test_bad_input_shapes_are_one_message_each(maxpool, tmp_path):
    model = load_any(maxpool)
    cases = {
        "y=1,3,64,64": "--input-shape y=1,3,64,64: " + f"{maxpool} has no input 'y'; its inputs: x [1,3,H,W]",
        "x=1,3,64": "--input-shape x=1,3,64: input 'x' has 4 dimension(s) [1,3,H,W], 3 given",
        "x=2,3,64,64": "--input-shape x=2,3,64,64: dimension 0 of input 'x' [1,3,H,W] is 1 in the model; "
        "only open dimensions can be pinned (H and W)",
    }
    for spec, expected in cases.items():
        with pytest.raises(ExplorerError) as err:
            pin_inputs(model, [parse_input_shape(spec)])
        assert str(err.value) == expected
    with pytest.raises(ExplorerError, match="input 'x' is given twice"):
        pin_inputs(model, [parse_input_shape("x=1,3,8,8"), parse_input_shape("x=1,3,8,8")])
    # through the command line: a size that is not a whole number, and an unknown input
    for spec, expected, code in (
        ("x=1,3,6.5,64", "argument --input-shape: 'x=1,3,6.5,64': '6.5' is not a size", 2),
        ("images=1,3,64,64", "has no input 'images'; its inputs: x [1,3,H,W]", 2),
    ):
        proc = run_cli("compile", maxpool, "-o", tmp_path / "b.bundle", "--input-shape", spec)
        assert proc.returncode == code and "Traceback" not in proc.stderr, proc.stderr
        lines = [ln for ln in proc.stderr.splitlines() if "error:" in ln]
        assert len(lines) == 1 and expected in lines[0], proc.stderr
        assert not (tmp_path / "b.bundle").exists()


def test_tflite_shape_signature_is_shown_and_pinned(tmp_path):
    """TVM's importer reads a TFLite input's example shape and never its shape_signature: the
    document says which dimension it froze; --input-shape imports another size, LiteRT sizes
    the model's inner tensors for it, and the numerics compare every layer at that size."""
    doc = render_document(load_any(SINE), OriginTable())[1]
    assert (
        f"input  {SINE_INPUT} float32[1,1]  (shape signature [-1,1]: dim 0 dynamic; TVM's importer freezes "
        "it at [1,1]; --input-shape pins other sizes)"
    ) in doc
    out = tmp_path / "sine4.bundle"
    proc = run_cli("compile", SINE, "-o", out, "--input-shape", f"{SINE_INPUT}=4,1", "--numerics-unfused")
    assert proc.returncode == 0, proc.stderr
    doc = (out / "model.tflgraph").read_text()
    assert f"{SINE_INPUT} float32[4,1]  (pinned by --input-shape; the model declares [-1,1])" in doc
    assert "float32[4,16]" in doc  # an inner tensor at the pinned batch
    numerics = json.loads((out / "numerics.json").read_text())
    assert all(e["observed"] for e in numerics["layers"]) and numerics["first_divergence"] is None
    with pytest.raises(ExplorerError, match="dimension 1 of input .* is 1 in the model; only open dimensions"):
        pin_inputs(load_any(SINE), [parse_input_shape(f"{SINE_INPUT}=4,2")])


def test_a_tflite_model_whose_frozen_inner_shapes_refuse_the_size_says_so():
    """logmelcalc's RESHAPE has its new shape frozen at the example input: LiteRT cannot size
    the model for another batch, and the message says so before anything is compiled."""
    with pytest.raises(ModelError) as err:
        pin_inputs(load_any(MODELS / "logmelcalc.tflite"), [parse_input_shape("input_2=3,16000")])
    message = str(err.value)
    assert "the model does not take --input-shape input_2=3,16000: LiteRT cannot size its tensors" in message
    assert "RESHAPE" in message and "froze the model's inner shapes" in message

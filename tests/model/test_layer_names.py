"""Layer names from TFLite tensor names (frontends/tflite/names.py), on real models."""

from pathlib import Path

import tflite

from tvm_explorer.frontends.tflite.document import render_model_document
from tvm_explorer.frontends.tflite.loader import load_model
from tvm_explorer.frontends.tflite.names import layer_name
from tvm_explorer.provenance import OriginTable

MODELS = Path(__file__).resolve().parents[1] / "models"
FILTERED = ("CONV_2D", "DEPTHWISE_CONV_2D", "FULLY_CONNECTED", "TRANSPOSE_CONV")


def test_fused_name_is_the_scope_of_the_main_op():
    name = (
        "m/conv_pw_3_relu_1/Relu6;m/conv_pw_3_bn_1/batchnorm/add_1;"
        "m/conv_pw_3_1/convolution;m/conv_pw_3_bn_1/batchnorm/sub1"
    )
    assert layer_name("CONV_2D", [name]) == "m/conv_pw_3_1"
    assert layer_name("DEPTHWISE_CONV_2D", ["a/dw_bn/add_1;a/dw_1/depthwise;;1"]) == "a/dw_1"


def test_unfused_name_is_kept_whole():
    assert layer_name("MUL", ["t/attention_1/Mul"]) == "t/attention_1/Mul"
    assert layer_name("CONV_2D", ["conv2d"]) == "conv2d"
    assert layer_name("ADD", []) == ""


def test_real_model_conv_names_are_distinct():
    model = load_model(MODELS / "mobilenet_v1_fp32.tflite")
    convs = [lay.name for lay in model.layers if lay.opcode == "CONV_2D"]
    assert convs[0].endswith("/conv1_1")
    assert len(set(convs)) == len(convs)


def _filter_names(path: Path) -> dict[int, tuple[int, str]]:
    """op index -> (buffer-holding tensor index, name) of each conv/FC filter, read straight
    from the flatbuffer (following DEQUANTIZE/DENSIFY), independent of frontends/tflite/names.py."""
    m = tflite.Model.GetRootAsModel(path.read_bytes(), 0)
    sg = m.Subgraphs(0)
    producer = {}
    for i in range(sg.OperatorsLength()):
        op = sg.Operators(i)
        for t in op.OutputsAsNumpy():
            producer[int(t)] = op
    out = {}
    for i in range(sg.OperatorsLength()):
        op = sg.Operators(i)
        code = m.OperatorCodes(op.OpcodeIndex())
        if max(code.BuiltinCode(), code.DeprecatedBuiltinCode()) not in (3, 4, 9, 67):
            continue  # CONV_2D, DEPTHWISE_CONV_2D, FULLY_CONNECTED, TRANSPOSE_CONV
        t = int(op.InputsAsNumpy()[1])
        while t in producer:  # a DEQUANTIZE (fp16 weights) or DENSIFY in front of the filter
            t = int(producer[t].InputsAsNumpy()[0])
        out[i] = (t, sg.Tensors(t).Name().decode())
    return out


def test_palm_detection_layers_are_named_after_their_own_filter():
    """palm_detection_lite's fused output names list other layers' scopes (op 69 lists
    conv2d_25 before its own conv2d_8): every conv is named after its own filter's scope and
    no two convs with different filters share a name."""
    path = MODELS / "palm_detection_lite.tflite"
    model = load_model(path)
    filters = _filter_names(path)
    assert len(filters) == 53
    by_name: dict[str, set[int]] = {}
    for op, (tensor, fname) in filters.items():
        lay = model.layer(0, op)
        scope = fname.split(";")[0].rsplit("/", 1)[0]
        assert lay.name == scope or lay.name.startswith(scope + "/"), (op, lay.name, fname)
        by_name.setdefault(lay.name, set()).add(tensor)
    assert all(len(t) == 1 for t in by_name.values()), {n: t for n, t in by_name.items() if len(t) > 1}
    assert model.layer(0, 69).name == "model_1/model/conv2d_8"
    assert model.layer(0, 10).name == "model_1/model/conv2d_1"
    text, _ = render_model_document(model, OriginTable())
    assert "op 69 CONV_2D  model_1/model/conv2d_8  " in text


def test_filter_listing_several_scopes_takes_the_one_no_other_filter_claims():
    """pose_detection op 29's folded filter is named '…/depthwise_conv2d_2/depthwise;
    …/depthwise_conv2d_3/depthwise'; op 42's filter is depthwise_conv2d_3's alone."""
    model = load_model(MODELS / "pose_detection.tflite")
    assert model.layer(0, 29).name == "model_1/model/depthwise_conv2d_2"
    assert model.layer(0, 42).name == "model_1/model/depthwise_conv2d_3"
    names = [lay.name for lay in model.layers if lay.opcode in FILTERED]
    assert len(set(names)) == len(names) == 73


def test_signature_output_name_gives_way_to_the_filter_scope():
    """sine_float's last FULLY_CONNECTED writes the signature output 'StatefulPartitionedCall:0'."""
    model = load_model(MODELS / "sine_float.tflite")
    assert [lay.name for lay in model.layers] == ["sequential/dense", "sequential/dense_1", "sequential/dense_2"]

"""Layer names from TFLite tensor names (model/names.py), on real models."""

from pathlib import Path

from tvm_explorer.model.loader import load_model
from tvm_explorer.model.names import layer_name

MODELS = Path(__file__).resolve().parents[1] / "models"


def test_fused_name_is_the_scope_of_the_main_op():
    name = ("m/conv_pw_3_relu_1/Relu6;m/conv_pw_3_bn_1/batchnorm/add_1;"
            "m/conv_pw_3_1/convolution;m/conv_pw_3_bn_1/batchnorm/sub1")
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

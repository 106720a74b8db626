"""A readable name for a TFLite layer, taken from its output tensor's name.

The TFLite converter names a fused operator's output by joining the TF ops it absorbed with
``;`` (``m/conv_pw_3_bn_1/batchnorm/add_1;m/conv_pw_3_1/convolution;…``). The layer's name is
the Keras scope of the op that does the layer's main work (``m/conv_pw_3_1``); an unfused
output keeps its whole name (``m/attention_1/Mul``, ``conv2d``).
"""

from __future__ import annotations

# Lower-case fragments of the TF op name that does an opcode's main work.
_CORE_OPS = {
    "CONV_2D": ("convolution", "conv2d"),
    "DEPTHWISE_CONV_2D": ("depthwise",),
    "TRANSPOSE_CONV": ("conv2d_transpose", "conv2dbackpropinput", "transpose"),
    "FULLY_CONNECTED": ("matmul", "tensordot", "dense"),
    "BATCH_MATMUL": ("matmul", "einsum"),
    "ADD": ("add",),
    "MUL": ("mul",),
}


def _parts(tensor_name: str) -> list[str]:
    return [p for p in tensor_name.split(";") if p and not p.isdigit()]


def layer_name(opcode: str, output_names: list[str]) -> str:
    """The layer's TF name: the scope of its main op's tensor, or the whole tensor name."""
    if not output_names:
        return ""
    parts = _parts(output_names[0])
    if not parts:
        return output_names[0]
    if len(parts) == 1:
        return parts[0]
    core = _CORE_OPS.get(opcode, ())
    chosen = next((p for p in parts if any(k in p.rsplit("/", 1)[-1].lower() for k in core)), parts[0])
    return chosen.rsplit("/", 1)[0] if "/" in chosen else chosen

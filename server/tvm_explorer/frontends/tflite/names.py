"""A readable name for a TFLite layer: the Keras scope of the op that does its work.

The TFLite converter names a fused operator's output by joining the TF ops it absorbed with
``;`` (``m/conv_pw_3_bn_1/batchnorm/add_1;m/conv_pw_3_1/convolution;…``). On MediaPipe- and
EfficientNet-class models that list also holds *other* layers' scopes (palm detection's op 69
has ``…/conv2d_25/Conv2D;…/conv2d_8/Conv2D1`` and its filter is ``…/conv2d_8/Conv2D``), so
the output name alone cannot say which scope is the layer's own. What identifies a conv or
fully-connected op is its filter, so:

1. an unfused output (one ``;``-part) is the layer's own name, kept whole
   (``m/attention_1/Mul``, ``conv2d``) — unless it names neither a core op nor the filter's
   scope (a signature output such as ``StatefulPartitionedCall:0``: then rule 2);
2. a fused output of an op with a constant filter (after DEQUANTIZE/DENSIFY) is named after
   the scope of the filter's core-op part (``…/conv2d_8``). A filter whose name lists several
   core-op scopes (BatchNorm folding joins them too) takes the one no other filter claims
   alone, then the one the output lists last;
3. any other fused output takes the scope of its first core-op part, as before;
4. two ops with different filters never share a name: a later one that would repeat an
   earlier one's name gets `` (op N)`` appended.
"""

from __future__ import annotations

# Lower-case fragments of the TF op name that does an opcode's main work.
_CORE_OPS = {
    "CONV_2D": ("convolution", "conv2d"),
    "DEPTHWISE_CONV_2D": ("depthwise",),
    "TRANSPOSE_CONV": ("conv2d_transpose", "conv2dbackpropinput", "transpose"),
    "FULLY_CONNECTED": ("matmul", "tensordot", "dense"),
    "BATCH_MATMUL": ("matmul", "einsum"),
    "CONV_3D": ("conv3d", "convolution"),
    "ADD": ("add",),
    "MUL": ("mul",),
}
# Opcodes whose input 1 is the filter/weight tensor, and the ops a constant filter passes
# through on its way in (fp16/int8 weights are DEQUANTIZEd, sparse ones DENSIFYed).
_FILTER_INPUT = {
    "CONV_2D": 1,
    "DEPTHWISE_CONV_2D": 1,
    "TRANSPOSE_CONV": 1,
    "FULLY_CONNECTED": 1,
    "BATCH_MATMUL": 1,
    "CONV_3D": 1,
}
_FILTER_PASS = ("DEQUANTIZE", "DENSIFY")


def _parts(tensor_name: str) -> list[str]:
    return [p for p in tensor_name.split(";") if p and not p.isdigit()]


def _scope(part: str) -> str:
    return part.rsplit("/", 1)[0] if "/" in part else part


def _core_scopes(opcode: str, tensor_name: str) -> list[str]:
    """Scopes of the ``;``-parts of a tensor name whose op is a core op of ``opcode``, in order."""
    core = _CORE_OPS.get(opcode, ())
    out: list[str] = []
    for p in _parts(tensor_name):
        if any(k in p.rsplit("/", 1)[-1].lower() for k in core) and _scope(p) not in out:
            out.append(_scope(p))
    return out


def layer_name(opcode: str, output_names: list[str]) -> str:
    """The layer's TF name read from its output tensor alone: the scope of its main op's
    tensor, or the whole tensor name (for layers without a model around them)."""
    if not output_names:
        return ""
    parts = _parts(output_names[0])
    if not parts:
        return output_names[0]
    if len(parts) == 1:
        return parts[0]
    scopes = _core_scopes(opcode, output_names[0])
    return scopes[0] if scopes else _scope(parts[0])


def _filter_source(layer, producer: dict):
    """The constant tensor ``layer`` reads its filter from (through DEQUANTIZE/DENSIFY), or None
    when the filter is computed (an activation, as in attention's BATCH_MATMUL)."""
    slot = _FILTER_INPUT.get(layer.opcode)
    if slot is None or len(layer.inputs) <= slot:
        return None
    tensor = layer.inputs[slot]
    for _ in range(8):
        if tensor.is_constant:
            return tensor
        src = producer.get((layer.subgraph, tensor.index))
        if src is None or src.opcode not in _FILTER_PASS or not src.inputs:
            return None
        tensor = src.inputs[0]
    return None


def _foreign(layer, filter_scopes: list[str]) -> bool:
    """An unfused output that does not name the op (a signature output such as
    ``StatefulPartitionedCall:0``): no core-op word and none of the filter's scopes."""
    out = layer.outputs[0].name
    return not _core_scopes(layer.opcode, out) and not any(out == s or out.startswith(s + "/") for s in filter_scopes)


def model_layer_names(layers: list) -> list[str]:
    """The name of every layer of a TFLite model (``model.loader.LayerInfo``), in order."""
    producer = {(lay.subgraph, t.index): lay for lay in layers for t in lay.outputs}
    names = [layer_name(lay.opcode, [t.name for t in lay.outputs]) for lay in layers]
    filters: dict[int, tuple[int, int]] = {}  # layer position -> (subgraph, filter tensor)
    candidates: dict[int, list[str]] = {}
    for i, lay in enumerate(layers):
        src = _filter_source(lay, producer)
        if src is None:
            continue
        filters[i] = (lay.subgraph, src.index)
        scopes = _core_scopes(lay.opcode, src.name)
        if not scopes or not lay.outputs:
            continue
        if len(_parts(lay.outputs[0].name)) < 2 and not _foreign(lay, scopes):
            continue  # unfused: the output is the op's own
        candidates[i] = scopes
    claimed = {(layers[i].subgraph, c[0]): filters[i] for i, c in candidates.items() if len(c) == 1}
    for i, scopes in candidates.items():
        if len(scopes) > 1:
            free = [s for s in scopes if claimed.get((layers[i].subgraph, s), filters[i]) == filters[i]]
            free = free or scopes
            listed = _core_scopes(layers[i].opcode, layers[i].outputs[0].name)
            in_output = [s for s in reversed(listed) if s in free]
            scopes = [in_output[0] if in_output else free[0]]
        names[i] = scopes[0]
    return _distinct(layers, names, filters)


def _distinct(layers: list, names: list[str], filters: dict[int, tuple[int, int]]) -> list[str]:
    """Names where no two ops with different filters share one."""
    owner: dict[tuple[int, str], tuple[int, int]] = {}
    for i in sorted(filters):
        key = (layers[i].subgraph, names[i])
        if owner.setdefault(key, filters[i]) != filters[i] and names[i]:
            names[i] = f"{names[i]} (op {layers[i].op_index})"
    return names

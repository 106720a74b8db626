"""Render a TFLite model as the bundle's model document (``model.tflgraph``).

One entry per operator: its index, opcode and TF name (``LayerInfo.name``), scalar options, and every input and output
tensor with shape and dtype. The entry is where "go to the layer" lands; each tensor name is
indexed so that "go to definition" on it reaches the layer producing it.
"""

from __future__ import annotations

import re

from tvm_explorer.bundle.format import MODEL_DOCUMENT
from tvm_explorer.bundle.index import Range
from tvm_explorer.bundle.sections.structure import quantization_text
from tvm_explorer.frontends.input_shapes import input_note
from tvm_explorer.frontends.tflite.loader import LayerInfo, LoadedModel, TensorInfo, declared_inputs
from tvm_explorer.inert.text import one_line
from tvm_explorer.provenance import OriginTable

_ENUMS = {
    "padding": {0: "SAME", 1: "VALID"},
    "fused_activation_function": {
        0: "NONE",
        1: "RELU",
        2: "RELU_N1_TO_1",
        3: "RELU6",
        4: "TANH",
        5: "SIGN_BIT",
        6: "SIGMOID",
    },
}


def _snake(name: str) -> str:
    return re.sub(r"(?<!^)(?=[A-Z])", "_", name).lower()


def shown_options(options: dict) -> dict[str, str]:
    """An operator's scalar options as people read them: snake_case names, enums by name
    (``padding=SAME``), floats short; in the order of the options' own names."""
    shown = {}
    for key, value in sorted(options.items()):
        key = _snake(key)
        value = _ENUMS.get(key, {}).get(value, value)
        if isinstance(value, float):
            value = f"{value:g}"
        shown[key] = str(value)
    return shown


def _format_options(options: dict) -> str:
    return " ".join(f"{key}={value}" for key, value in shown_options(options).items())


def _quantization(t: TensorInfo) -> str:
    """`` quantized scale=0.0235 zero_point=-128`` (per-channel: the first and the count)."""
    if not t.scales:
        return " quantized"
    zero_point = t.zero_points[0] if t.zero_points else None
    return f" quantized {quantization_text(t.scales[0], zero_point, len(t.scales))}"


def _type(t: TensorInfo) -> str:
    dims = ",".join(str(d) for d in t.shape)
    return f"{t.dtype}[{dims}]"


class _Writer:
    def __init__(self):
        self.parts: list[str] = []
        self.offset = 0
        self.ranges: list[Range] = []

    def write(self, text: str) -> int:
        start = self.offset
        self.parts.append(text)
        self.offset += len(text)
        return start


def render_model_document(model: LoadedModel, origins: OriginTable) -> tuple[str, list[Range]]:
    """The model document's text and its ranges (layers and tensor names)."""
    producer: dict[tuple[int, str], int] = {}
    for layer in model.layers:
        for t in layer.outputs:
            producer[(layer.subgraph, t.name)] = layer.id
    layer_sets = {lay.id: origins.intern([(lay.id, True)]) for lay in model.layers}

    w = _Writer()
    n_ops = len(model.layers)
    w.write(f"# TFLite model {one_line(model.name)}\n")
    w.write(f"# sha256 {model.sha256}\n")
    w.write(
        f"# {len(model.subgraphs)} subgraph(s), {n_ops} operator(s). "
        "Go to definition on a tensor name reaches the layer that produces it.\n"
    )

    declared = dict(declared_inputs(model))

    def tensor_line(prefix: str, s: int, t: TensorInfo, width: int, note: str = "") -> None:
        w.write(prefix)
        shown = one_line(t.name)
        start = w.write(shown)
        owner = producer.get((s, t.name))
        w.ranges.append(
            Range(
                start,
                start + len(shown),
                layer_sets[owner] if owner is not None else 0,
                "tensor",
                f"tensor:{s}:{t.name}",
            )
        )
        pad = " " * max(1, width - len(shown) + 1)
        extra = " const" if t.is_constant else ""
        extra += _quantization(t) if t.quantized else ""
        w.write(f"{pad}{_type(t)}{extra}{note}\n")

    for sg in model.subgraphs:
        w.write(f'\nsubgraph {sg.index} "{one_line(sg.name)}"\n')
        width = max([len(one_line(t.name)) for t in sg.inputs + sg.outputs] + [0])
        for t in sg.inputs:
            note = ""
            if sg.index == 0 and t.name in declared:
                note = input_note(declared[t.name], t.shape, t.name in model.pinned, frozen=True)
            tensor_line("  input  ", sg.index, t, width, note)
        for t in sg.outputs:
            tensor_line("  output ", sg.index, t, width)
        layers: list[LayerInfo] = [lay for lay in model.layers if lay.subgraph == sg.index]
        for lay in layers:
            w.write("\n")
            start = w.write(f"op {lay.op_index} {one_line(lay.opcode)}")
            if lay.name:  # the TF name (Keras scope) of the layer, beside its opcode
                w.write(f"  {one_line(lay.name)}")
            opts = one_line(_format_options(lay.options))
            w.write(f"  {opts}\n" if opts else "\n")
            width = max([len(one_line(t.name)) for t in lay.inputs + lay.outputs] + [0])
            for t in lay.inputs:
                tensor_line("  in   ", sg.index, t, width)
            for t in lay.outputs:
                tensor_line("  out  ", sg.index, t, width)
            w.ranges.append(
                Range(start, w.offset - 1, layer_sets[lay.id], "layer", f"layer:{lay.subgraph}:{lay.op_index}")
            )
    return "".join(w.parts), w.ranges


def render_document(model: LoadedModel, origins: OriginTable) -> tuple[str, str, list[Range]]:
    """``(path, text, ranges)`` of the model document in the bundle (``Frontend.render_document``)."""
    return (MODEL_DOCUMENT, *render_model_document(model, origins))

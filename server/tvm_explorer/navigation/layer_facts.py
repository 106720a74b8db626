"""What the model document says about each layer: options and tensor types, read back from
its entry text (``frontends/tflite/document.py`` writes it), so that hovers can show a layer's
attributes without the TFLite file."""

from __future__ import annotations

import re
import threading
import weakref
from dataclasses import dataclass, field

from tvm_explorer.navigation.view import BundleView

# "  in  x  int8[..]" (model.tflgraph) and "    in   x float32[..]" (ONNX / PyTorch documents)
_TENSOR = re.compile(r"^ +(in|out) +(\S+) +(\w+)\[([^\]]*)\]((?: const)?)((?: quantized.*)?)$")
_OPTION = re.compile(r"(\w+)=(\S+)")


@dataclass(frozen=True)
class TensorFacts:
    """One input or output of a layer as the model document prints it."""

    name: str
    dtype: str
    shape: tuple[str, ...]
    const: bool
    quantization: str  # "scale=0.0235 zero_point=-128", "scale=0.001..(16 per-channel)" or ""

    @property
    def type_text(self) -> str:
        """``int8[1,26,26,16]``."""
        return f"{self.dtype}[{','.join(self.shape)}]"


@dataclass
class LayerFacts:
    """A layer's options and tensors."""

    options: dict[str, str] = field(default_factory=dict)
    inputs: list[TensorFacts] = field(default_factory=list)
    outputs: list[TensorFacts] = field(default_factory=list)


def _parse_entry(text: str) -> LayerFacts:
    lines = text.split("\n")
    facts = LayerFacts()
    facts.options = dict(_OPTION.findall(lines[0]))
    for line in lines[1:]:
        m = _TENSOR.match(line)
        if not m:
            continue
        quant = m.group(6).strip()
        quant = quant[len("quantized") :].strip() if quant else ""
        tensor = TensorFacts(
            m.group(2),
            m.group(3),
            tuple(d for d in m.group(4).split(",") if d),
            bool(m.group(5)),
            quant if m.group(6) else "",
        )
        (facts.inputs if m.group(1) == "in" else facts.outputs).append(tensor)
    return facts


_CACHE: weakref.WeakKeyDictionary[BundleView, dict[int, LayerFacts]] = weakref.WeakKeyDictionary()
_LOCK = threading.Lock()


def layer_facts(view: BundleView, layer_id: int) -> LayerFacts:
    """The facts of a layer (empty when its model entry cannot be read)."""
    with _LOCK:
        table = _CACHE.get(view)
    if table is None:
        table = {}
        path = view.model_path
        try:
            text = view.bundle.text(path)
        except Exception:  # noqa: BLE001 - a damaged model document: hovers go without attributes
            text = ""
        for lid, places in view.layer_map.model_places.items():
            if places:
                table[lid] = _parse_entry(text[places[0].start : places[0].end])
        with _LOCK:
            _CACHE[view] = table
    return table.get(layer_id, LayerFacts())

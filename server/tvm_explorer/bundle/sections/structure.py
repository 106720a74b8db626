"""``structure.json``: the model's structure as data, written at capture from the loaded model
(``capture/structure.py``): every layer's input and output tensors (name, dtype, shape,
constant, quantization), its options as the model document shows them, the module it belongs
to, and each graph's name, inputs and outputs. Hovers (``navigation/layer_facts.py``) and the
graph (``graphview/structure.py``) read this; the model document is only a rendering of it
for people, and nothing parses it back. No TVM here.

Compact for models of 10 000 layers: each tensor is written once, in ``tensors``, and layers
and graphs name it by its position there; each module path once, in ``modules``."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from tvm_explorer.bundle import fields as f
from tvm_explorer.bundle.sections import Section
from tvm_explorer.bundle.types import Layer

STRUCTURE_FILE = "structure.json"
SCHEMA_VERSION = 1


class StructureError(ValueError):
    """``structure.json`` does not have the documented shape."""


@dataclass(frozen=True)
class TensorFacts:
    """One input or output of a layer, or of a graph."""

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


@dataclass
class GraphIO:
    """A graph input or output tensor."""

    kind: str  # "input" | "output"
    subgraph: int
    name: str
    type: str


@dataclass
class ModelStructure:
    """A validated ``structure.json``: the facts of each layer (by layer id), the graphs'
    inputs and outputs, their names, and each layer's module (path, class) where it has one."""

    layers: list[LayerFacts] = field(default_factory=list)
    io: list[GraphIO] = field(default_factory=list)
    subgraph_names: dict[int, str] = field(default_factory=dict)
    modules: dict[int, tuple[str, str]] = field(default_factory=dict)  # layer id -> (path, class)

    def facts(self, layer_id: int) -> LayerFacts:
        """The facts of a layer (empty for an id the structure does not know)."""
        return self.layers[layer_id] if 0 <= layer_id < len(self.layers) else LayerFacts()


def quantization_text(scale: float, zero_point: int | None, channels: int) -> str:
    """``scale=0.0235 zero_point=-128`` (per-channel: the first scale and the count), as the
    model document and the hovers show a quantized tensor."""
    if channels > 1:
        return f"scale={scale:.6g}..({channels} per-channel)"
    return f"scale={scale:.6g}" + (f" zero_point={zero_point}" if zero_point is not None else "")


def validate(data: object, layers: Sequence[Layer]) -> ModelStructure:
    """Check the documented shape (docs/bundle-format.md) and build the structure."""
    if not isinstance(data, dict) or data.get("schema_version") != SCHEMA_VERSION:
        raise StructureError(f"must be an object with schema_version {SCHEMA_VERSION}")
    raw_tensors = data.get("tensors")
    if not isinstance(raw_tensors, list):
        raise StructureError("'tensors' must be a list")
    tensors = [_tensor(raw, i) for i, raw in enumerate(raw_tensors)]
    out = ModelStructure()
    raw_modules = data.get("modules", [])
    f.strings(raw_modules if isinstance(raw_modules, list) else None, "'modules'", StructureError)
    for i, graph in f.objects(data.get("graphs"), "'graphs'", "graph", StructureError):
        f.integer(graph.get("subgraph"), f"graph {i}: 'subgraph'", StructureError)
        f.string(graph.get("name"), f"graph {i}: 'name'", StructureError)
        out.subgraph_names[graph["subgraph"]] = graph["name"]
        for kind in ("input", "output"):
            for t in _refs(graph.get(f"{kind}s", []), tensors, f"graph {i}: '{kind}s'"):
                out.io.append(GraphIO(kind, graph["subgraph"], t.name, t.type_text))
    raw_layers = data.get("layers")
    if not isinstance(raw_layers, list) or len(raw_layers) != len(layers):
        raise StructureError(f"'layers' must be a list of one entry per layer ({len(layers)})")
    for i, raw in enumerate(raw_layers):
        f.obj(raw, f"layer {i}", StructureError)
        options = raw.get("options", {})
        if not isinstance(options, dict) or not all(isinstance(v, str) for v in options.values()):
            raise StructureError(f"layer {i}: 'options' must be an object of strings")
        out.layers.append(
            LayerFacts(
                options,
                _refs(raw.get("inputs", []), tensors, f"layer {i}: 'inputs'"),
                _refs(raw.get("outputs", []), tensors, f"layer {i}: 'outputs'"),
            )
        )
        if "module" in raw:
            f.integer(raw["module"], f"layer {i}: 'module'", StructureError, high=len(raw_modules) - 1)
            out.modules[i] = (raw_modules[raw["module"]], layers[i].module_class)
    return out


def _tensor(raw, i: int) -> TensorFacts:
    """``[name, dtype, shape, const, quantization]``: quantization null or ``[scale,
    zero_point or null, channels]``."""
    where = f"tensor {i}"
    if not isinstance(raw, list) or len(raw) != 5:
        raise StructureError(f"{where} must be [name, dtype, shape, const, quantization]")
    name, dtype, shape, const, quant = raw
    f.string(name, f"{where}: name", StructureError)
    f.string(dtype, f"{where}: dtype", StructureError)
    f.boolean(const, f"{where}: const", StructureError)
    if not isinstance(shape, list) or not all(isinstance(d, (int, str)) and not isinstance(d, bool) for d in shape):
        raise StructureError(f"{where}: shape must be a list of integers and strings")
    text = ""
    if quant is not None:
        if not isinstance(quant, list) or len(quant) != 3:
            raise StructureError(f"{where}: quantization must be null or [scale, zero_point, channels]")
        f.number(quant[0], f"{where}: scale", StructureError, nullable=False, low=-f.MAX_FLOAT, high=f.MAX_FLOAT)
        f.integer(quant[1], f"{where}: zero_point", StructureError, nullable=True, low=-(2**63))
        f.integer(quant[2], f"{where}: channels", StructureError, low=1)
        text = quantization_text(float(quant[0]), quant[1], quant[2])
    return TensorFacts(name, dtype, tuple(str(d) for d in shape), const, text)


def _refs(raw, tensors: list[TensorFacts], where: str) -> list[TensorFacts]:
    """The tensors a list of positions in ``tensors`` names."""
    if not isinstance(raw, list) or not all(type(k) is int and 0 <= k < len(tensors) for k in raw):
        raise StructureError(f"{where} must be a list of tensor positions")
    return [tensors[k] for k in raw]


SECTION = Section(STRUCTURE_FILE, "model structure", validate)

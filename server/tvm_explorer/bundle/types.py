"""What a loaded bundle is made of: its layers, documents and origins (``reader.Bundle`` holds
them), as plain frozen data."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Layer:
    """One operator of the model (a TFLite operator, an ONNX node, a PyTorch graph node)."""

    id: int
    subgraph: int
    op_index: int
    opcode: str
    outputs: tuple[str, ...]
    output_types: tuple[dict, ...]
    name: str = ""  # TF layer name, ONNX node name, PyTorch module path/node
    module_class: str = ""  # PyTorch: class of the innermost module (``Conv2d``)
    source: tuple[str, int] | None = None  # the innermost model-code line (file, line), when known
    stack: tuple[tuple[str, int, str], ...] = ()  # every frame (file, line, function), entry first
    # Model Explorer's ids of the node in the original model file (graph id, node id), when
    # the compile recorded them (``tvm-explorer overlays``)
    explorer_key: tuple[str, str] | None = None
    # What a person reads as its name: ``name``, else what the compile recorded for a layer the
    # model names not (``frontends/tflite/names.py``: the scope in a fused output name), else
    # its first output's name; filled once when the bundle loads
    display_name: str = ""


def explorer_key_of(raw) -> tuple[str, str] | None:
    """A layer's ``{"graph", "node"}`` Model Explorer entry, or None when absent or malformed."""
    if isinstance(raw, dict) and isinstance(raw.get("graph"), str) and isinstance(raw.get("node"), str):
        return raw["graph"], raw["node"]
    return None


def stack_of(raw) -> tuple[tuple[str, int, str], ...]:
    """A layer's ``stack`` entry (frames ``{"file", "line", "function"}``); malformed frames
    are left out, a missing or malformed entry is no stack (older bundles have none)."""
    if not isinstance(raw, list):
        return ()
    return tuple(
        (f["file"], f["line"], f["function"] if isinstance(f.get("function"), str) else "")
        for f in raw
        if isinstance(f, dict) and isinstance(f.get("file"), str) and isinstance(f.get("line"), int)
    )


def source_of(raw) -> tuple[str, int] | None:
    """A layer's ``{"file", "line"}`` source entry, or None when absent or malformed."""
    if isinstance(raw, dict) and isinstance(raw.get("file"), str) and isinstance(raw.get("line"), int):
        return raw["file"], raw["line"]
    return None


@dataclass(frozen=True)
class Document:
    """One text document of a bundle."""

    path: str
    stage: str
    language: str
    pass_index: int | None
    order: int
    source: str | None = None  # the document this one was compiled from (SASS: its CUDA)


@dataclass(frozen=True)
class Origin:
    """A layer that a piece of text came from."""

    layer: Layer
    is_output: bool

    def to_json(self) -> dict:
        """The shape printed by ``tvm-explorer origins --json``."""
        return {
            "subgraph": self.layer.subgraph,
            "op_index": self.layer.op_index,
            "opcode": self.layer.opcode,
            "outputs": list(self.layer.outputs),
            "is_output": self.is_output,
            **layer_extras(self.layer),
        }


def layer_extras(layer: Layer) -> dict:
    """``name`` (when the bundle has one), ``module_class`` and ``source`` (when known) of a
    layer, as JSON."""
    out: dict = {}
    if layer.name:
        out["name"] = layer.name
    if layer.module_class:
        out["module_class"] = layer.module_class
    if layer.source is not None:
        out["source"] = {"file": layer.source[0], "line": layer.source[1]}
    if layer.stack:
        out["stack"] = [{"file": f, "line": n, "function": fn} for f, n, fn in layer.stack]
    return out

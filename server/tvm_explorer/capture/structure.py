"""The model's structure as data (``structure.json``, ``bundle/sections/structure.py``), from
the loaded model the compile captures: each layer's tensors, options and module, each graph's
name, inputs and outputs. Written beside the model document, which renders the same facts for
people; the editor reads this, never that text."""

from __future__ import annotations

import json

from tvm_explorer.bundle.sections.structure import SCHEMA_VERSION, STRUCTURE_FILE
from tvm_explorer.frontends import frontend_of


class _Tensors:
    """The ``tensors`` table: each distinct tensor once, named by its position."""

    def __init__(self) -> None:
        self.rows: list[list] = []
        self._at: dict[str, int] = {}

    def ref(self, t) -> int:
        quant = None
        if t.quantized and t.scales:
            quant = [t.scales[0], t.zero_points[0] if t.zero_points else None, len(t.scales)]
        row = [t.name, t.dtype, [d if isinstance(d, int) else str(d) for d in t.shape], bool(t.is_constant), quant]
        key = json.dumps(row)
        at = self._at.get(key)
        if at is None:
            at = self._at[key] = len(self.rows)
            self.rows.append(row)
        return at


def model_structure(model) -> dict:
    """``structure.json`` of a loaded model (any kind: TFLite, ONNX, PyTorch, nn)."""
    shown = frontend_of(model).shown_options or (lambda options: {k: str(v) for k, v in options.items()})
    tensors = _Tensors()
    modules: dict[str, int] = {}
    layers = []
    for lay in model.layers:
        entry: dict = {}
        options = shown(lay.options)
        if options:
            entry["options"] = options
        if lay.inputs:
            entry["inputs"] = [tensors.ref(t) for t in lay.inputs]
        if lay.outputs:
            entry["outputs"] = [tensors.ref(t) for t in lay.outputs]
        module = getattr(lay, "module", "")
        if module:
            entry["module"] = modules.setdefault(module, len(modules))
        layers.append(entry)
    graphs = [
        {
            "subgraph": sg.index,
            "name": sg.name,
            "inputs": [tensors.ref(t) for t in sg.inputs],
            "outputs": [tensors.ref(t) for t in sg.outputs],
        }
        for sg in model.subgraphs
    ]
    return {
        "schema_version": SCHEMA_VERSION,
        "tensors": tensors.rows,
        "graphs": graphs,
        "modules": list(modules),
        "layers": layers,
    }


def write_structure(writer, model) -> None:
    """Write ``structure.json`` into the bundle being written."""
    writer.add_file(STRUCTURE_FILE, json.dumps(model_structure(model), separators=(",", ":")))

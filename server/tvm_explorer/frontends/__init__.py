"""Model kinds beyond TFLite: which frontend reads a file, and how its model is imported.

``load_any(path)`` reads a ``.tflite`` (``model/loader.py``), ``.onnx`` (``frontends/onnx``) or
``.pt2`` (``frontends/torch``) file; ``import_any(model, origins)`` imports it with TVM's own
frontend for that kind, stamping every binding with the operator/node it came from.
"""

from __future__ import annotations

import os

from ..errors import ModelError
from ..provenance import OriginTable

SUFFIXES = {".tflite": "tflite", ".onnx": "onnx", ".pt2": "torch"}


def kind_of(path: str | os.PathLike) -> str:
    """The model kind of a file, by its suffix (``tflite`` for anything unknown, whose
    loader then says what the file is not)."""
    return SUFFIXES.get(os.path.splitext(os.fspath(path))[1].lower(), "tflite")


def load_any(path: str | os.PathLike):
    """Read a model of any supported kind; ModelError names the file if it cannot."""
    kind = kind_of(path)
    if kind == "onnx":
        from .onnx.loader import load_onnx

        return load_onnx(path)
    if kind == "torch":
        from .torch.loader import load_pt2

        return load_pt2(path)
    from ..model.loader import load_model

    return load_model(path)


def import_any(model, origins: OriginTable | None, *, fill_spans: bool = True):
    """Import a loaded model with TVM's frontend for its kind (spans filled unless told not)."""
    kind = getattr(model, "kind", "tflite")
    if kind == "onnx":
        from .onnx.importer import import_onnx

        return import_onnx(model, origins, fill_spans=fill_spans)
    if kind == "torch":
        from .torch.importer import import_torch

        return import_torch(model, origins, fill_spans=fill_spans)
    from ..capture.importer import import_tflite

    return import_tflite(model, origins, fill_spans=fill_spans)


def render_document(model, origins: OriginTable):
    """``(path, text, ranges)`` of the model document of a loaded model of any kind."""
    from ..bundle.format import MODEL_DOCUMENT

    if getattr(model, "kind", "tflite") == "tflite":
        from ..model.document import render_model_document

        return (MODEL_DOCUMENT, *render_model_document(model, origins))
    from .document import render_graph_document

    return (model.document_path, *render_graph_document(model, origins))


def layer_table(model) -> list[dict]:
    """The bundle's layer table: one entry per operator/node, with its name and source line."""
    table = []
    for lay in model.layers:
        entry = {
            "id": lay.id,
            "subgraph": lay.subgraph,
            "op_index": lay.op_index,
            "opcode": lay.opcode,
            "outputs": [t.name for t in lay.outputs],
            "output_types": [{"shape": [d if isinstance(d, int) else str(d) for d in t.shape],
                              "dtype": t.dtype} for t in lay.outputs],
        }
        name = lay.name
        if name:
            entry["name"] = name
        if getattr(lay, "module_class", ""):
            entry["module_class"] = lay.module_class
        source = getattr(lay, "source", None)
        if source:
            entry["source"] = {"file": source[0], "line": source[1]}
        table.append(entry)
    return table


__all__ = ["ModelError", "import_any", "kind_of", "layer_table", "load_any", "render_document"]

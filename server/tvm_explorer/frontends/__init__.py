"""Model kinds: which frontend reads a file, and how its model is imported.

Every kind is a ``Frontend`` (``frontends/base.py``) in ``FRONTENDS``: ``frontends/tflite``,
``frontends/onnx``, ``frontends/torch``. ``load_any(path)`` reads a file by its suffix;
``import_any(model, origins)`` imports it with TVM's own frontend for its kind, stamping
every binding with the operator/node it came from.
"""

from __future__ import annotations

import os

from tvm_explorer.errors import ModelError
from tvm_explorer.frontends.base import Frontend
from tvm_explorer.frontends.model import Model
from tvm_explorer.frontends.nn import FRONTEND as NN
from tvm_explorer.frontends.onnx import FRONTEND as ONNX
from tvm_explorer.frontends.tflite import FRONTEND as TFLITE
from tvm_explorer.frontends.tflite.names import layer_name
from tvm_explorer.frontends.torch import FRONTEND as TORCH
from tvm_explorer.provenance import OriginTable

FRONTENDS: tuple[Frontend, ...] = (TFLITE, ONNX, TORCH, NN)
_BY_SUFFIX = {f.suffix: f for f in FRONTENDS}
_BY_KIND = {f.kind: f for f in FRONTENDS}
SUFFIXES = {f.suffix: f.kind for f in FRONTENDS}


def frontend_for(path: str | os.PathLike) -> Frontend:
    """The frontend of a file, by its suffix (TFLite for anything unknown, whose loader then
    says what the file is not); ``FILE.py:FACTORY`` is a ``tvm.relax.frontend.nn`` model."""
    if is_python_model(path):
        return NN
    return _BY_SUFFIX.get(os.path.splitext(os.fspath(path))[1].lower(), TFLITE)


def frontend_of(model) -> Frontend:
    """The frontend of a loaded model, or of a bundle manifest's ``model.kind``."""
    kind = model if isinstance(model, str) else getattr(model, "kind", "tflite")
    return _BY_KIND.get(kind, TFLITE)


def kind_of(path: str | os.PathLike) -> str:
    """The model kind of a file, by its suffix."""
    return frontend_for(path).kind


def is_python_model(text: str | os.PathLike) -> bool:
    """Whether a model argument is ``FILE.py:FACTORY``: code, which loading it runs."""
    from tvm_explorer.frontends.nn.factory import split_factory

    return split_factory(os.fspath(text)) is not None


def load_any(path: str | os.PathLike) -> Model:
    """Read a model of any supported kind; ModelError names the file if it cannot."""
    return frontend_for(path).load(path)


def load_as(kind: str, path: str | os.PathLike) -> Model:
    """Read a model file as the kind ``kind`` (``tflite`` | ``onnx`` | ``torch`` | ``nn``),
    whatever its suffix."""
    return _BY_KIND[kind].load(path)


def from_memory(kind: str, *args, **kwargs) -> Model:
    """A model of kind ``kind`` already in memory, described as a loaded model
    (``Frontend.from_memory``: the ``Capture`` API's ``from_onnx``, ``from_torch``, ``from_nn``)."""
    describe = _BY_KIND[kind].from_memory
    if describe is None:
        raise ValueError(f"a {kind} model is read from its file only")
    return describe(*args, **kwargs)


def import_any(model, origins: OriginTable | None, *, fill_spans: bool = True):
    """Import a loaded model with TVM's frontend for its kind (spans filled unless told not),
    every name in it a plain identifier (``plain_names``: a model's names reach the generated
    code)."""
    from tvm_explorer.frontends.plain_names import plain_names

    return plain_names(frontend_of(model).import_model(model, origins, fill_spans=fill_spans))


def pin_inputs(model, given: list):
    """The model with its open input dimensions pinned (``--input-shape``: a list of
    ``input_shapes.InputShape``); ExplorerError names any mistake."""
    from tvm_explorer.errors import ExplorerError
    from tvm_explorer.frontends.input_shapes import check_input_shapes

    if not given:
        return model
    frontend = frontend_of(model)
    if frontend.pin_inputs is None or frontend.input_dims is None:
        raise ExplorerError(
            f"--input-shape: {model.path} is a {frontend.kind} model, whose input shapes are fixed where it is "
            "written (the factory's spec); --input-shape is for .onnx, .pt2 and .tflite models"
        )
    shapes = check_input_shapes(str(model.path), frontend.input_dims(model), list(given))
    return frontend.pin_inputs(model, shapes)


def render_document(model, origins: OriginTable):
    """``(path, text, ranges)`` of the model document of a loaded model of any kind."""
    return frontend_of(model).render_document(model, origins)


def layer_table(model) -> list[dict]:
    """The bundle's layer table: one entry per operator/node, with its name (and ``display_name``
    where people read another than the reader's default: docs/bundle-format.md), source line and stack,
    and the ids Model Explorer's own adapter gives its node in the original model file
    (``model_explorer``: graph id and node id; each frontend's loader knows its adapter's rule),
    which ``tvm-explorer overlays`` keys its node-data files by."""
    table = []
    for lay in model.layers:
        outputs = [t.name for t in lay.outputs]
        entry = {
            "id": lay.id,
            "subgraph": lay.subgraph,
            "op_index": lay.op_index,
            "opcode": lay.opcode,
            "outputs": outputs,
            "output_types": [
                {"shape": [d if isinstance(d, int) else str(d) for d in t.shape], "dtype": t.dtype} for t in lay.outputs
            ],
        }
        name = lay.name
        if name:
            entry["name"] = name
        shown = name or layer_name(lay.opcode, outputs)
        if shown != (name or (outputs[0] if outputs else "")):  # the reader's default otherwise
            entry["display_name"] = shown
        if getattr(lay, "module_class", ""):
            entry["module_class"] = lay.module_class
        source = getattr(lay, "source", None)
        if source:
            entry["source"] = {"file": source[0], "line": source[1]}
        stack = getattr(lay, "stack", ())
        if stack:
            entry["stack"] = [{"file": f, "line": n, "function": fn} for f, n, fn in stack]
        key = getattr(lay, "explorer_key", None)
        if key is not None:
            entry["model_explorer"] = {"graph": key[0], "node": key[1]}
        table.append(entry)
    return table


__all__ = [
    "FRONTENDS",
    "Frontend",
    "ModelError",
    "frontend_for",
    "frontend_of",
    "from_memory",
    "import_any",
    "is_python_model",
    "kind_of",
    "layer_table",
    "load_any",
    "load_as",
    "pin_inputs",
    "render_document",
]

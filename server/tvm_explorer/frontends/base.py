"""The ``Frontend`` interface: everything the rest of the product needs to know about one
model kind (TFLite, ONNX, PyTorch), so that no other room decides per kind.

A new model kind is a package ``frontends/<kind>/`` whose ``__init__`` defines ``FRONTEND``
(imports of the kind's heavy libraries stay inside the functions, so that choosing a frontend
by a file's suffix costs nothing), and one entry in ``frontends.FRONTENDS``.
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from tvm_explorer.provenance import OriginTable

Path = str | os.PathLike


def lazy(module: str, function: str) -> Callable[..., Any]:
    """``module.function``, imported at its first call: a kind's ``FRONTEND`` names its
    functions without importing them (nor TVM, onnx or torch behind them) until one is used.
    ``tests/frontends/test_lazy_frontends.py`` checks that every one resolves."""

    def call(*args, **kwargs):
        return getattr(importlib.import_module(module), function)(*args, **kwargs)

    call.__name__ = call.__qualname__ = function
    call.__module__ = module
    return call


def no_quantization(path: Path) -> dict:
    """A model kind whose reference names no quantized tensors (a float program)."""
    return {}


@dataclass(frozen=True)
class ReferenceEngine:
    """The model's own framework, run on the same inputs as the compiled model
    (``--numerics``, ``bisect``): see ``frontends/reference_run.py`` for what it returns."""

    describe: Callable[[Path], str]
    """``LiteRT interpreter on m.tflite``: what a report says it compared with."""
    run: Callable[[Path, dict], Any]
    """``run(path, inputs)``: a ``ReferenceRun`` with every tensor by name."""
    quantization_of: Callable[[Path], dict]
    """Every quantized tensor's ``Quantization`` in the model at a path (nothing is run)."""
    check_same_graph: Callable[[Any, str], None]
    """``check_same_graph(model, reference_path)`` raises ExplorerError naming the first
    tensor the reference lacks or types differently."""
    arena: Callable[[Path], dict] | None = None
    """The engine's own memory plan of the model at a path, ``{"engine", "arena_bytes",
    "method"}`` or ``{"error": reason}`` (``memory.json``'s reference; None: the engine
    does not say)."""


@dataclass(frozen=True)
class GraphOp:
    """One operator/node of a model's main graph, as ``reduce`` sees it: which tensors it
    reads and writes (by name), nothing about what it computes."""

    index: int
    """Position in the main graph (TFLite operator index, ONNX node index)."""
    opcode: str
    name: str
    inputs: tuple[str, ...]
    """Tensors read that are not constants (constants stay with the op in any sub-model)."""
    outputs: tuple[str, ...]


@dataclass(frozen=True)
class SubgraphWriter:
    """The reducer capability of a model kind (``tvm-explorer reduce``): list the main graph's
    operators, and write a valid model of the same kind that keeps only some of them. Tensors
    a kept operator reads from a dropped one become graph inputs; constants stay constants."""

    ops: Callable[[Path], list[GraphOp]]
    """The main graph's operators, in graph (topological) order."""
    write: Callable[[Path, Any, Path], None]
    """``write(model_path, kept_indices, out_path)``; ModelError if no valid model has them."""
    blamed_opcode: Callable[[str], str | None]
    """The operator kind an import failure message of ``import_model`` names, if any."""
    stock_import: str
    """Python source (stock TVM only) that sets ``mod`` from the model file at ``path``: what
    a reproducer script does to import."""
    count_ops: Callable[[Path], int] | None = None
    """Operators over all of a model file's graphs (the main one and the bodies of loops and
    branches), where a model kind has such graphs."""


@dataclass(frozen=True)
class Frontend:
    """One model kind."""

    kind: str
    """``tflite`` | ``onnx`` | ``torch``: as the bundle's manifest records it."""
    suffix: str
    """The model file's suffix (``.tflite``)."""
    unit: str
    """What a layer is called in tables and messages: ``op`` (TFLite) or ``node``."""
    load: Callable[[Path], Any]
    """Read a model file (``LoadedModel`` / ``GraphModel``); ModelError names the file."""
    preview: Callable[[Path], Any]
    """Read a model file only to show its model document: bounded, and nothing in it is run
    (a ``.pt2`` is read from its graph JSON)."""
    import_model: Callable[..., Any]
    """``import_model(model, origins, fill_spans=True)``: the Relax IRModule from TVM's own
    importer, every binding stamped with its layer (``frontends/stamping.py``)."""
    render_document: Callable[[Any, OriginTable], tuple]
    """``(path, text, ranges)`` of the model's document in the bundle."""
    reference: ReferenceEngine
    shown_options: Callable[[dict], dict[str, str]] | None = None
    """A layer's options as its model document shows them, name -> text (``structure.json``
    carries them); None: the loader's options are text already."""
    input_dims: Callable[[Any], list] | None = None
    """(name, shape) of each input as the model declares it, open dimensions as strings (or
    TFLite's ``-1``), None for an input with no shape (``frontends/input_shapes.py``)."""
    pin_inputs: Callable[[Any, dict], Any] | None = None
    """``pin_inputs(model, {name: sizes})``: the model to import with those input sizes
    (``--input-shape``, checked already); None: this kind takes no ``--input-shape``."""
    from_memory: Callable[..., Any] | None = None
    """A model already in memory, described as ``load`` describes a file (the ``Capture``
    API: an ``onnx.ModelProto``; a PyTorch program or module and its example arguments; a
    ``tvm.relax.frontend.nn`` module and its spec). None: only files of this kind are read."""
    subgraph_writer: SubgraphWriter | None = None
    """How ``reduce`` cuts the model (None: this kind cannot be reduced)."""
    explorer_adapter: str = ""
    """Which Model Explorer adapter opens this kind (``tvm-explorer overlays`` keys its node
    data the way that adapter names nodes; each loader records the ids: ``explorer_key``)."""
    explorer_extension: str = ""
    """The pip package of that adapter when it is not built into Model Explorer (it is then
    passed as ``--extensions=<module>``: ``explorer_extension_module``)."""
    explorer_extension_module: str = ""

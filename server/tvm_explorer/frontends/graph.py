"""A model kind other than TFLite, described the way capture and the bundle need it.

Each frontend (``frontends/onnx``, ``frontends/torch``) reads its model into a ``GraphModel``:
one ``GraphNode`` per graph node, numbered in the order TVM's importer converts them. A node
plays the part a TFLite operator plays everywhere else (``layer`` in the bundle): it has an
id, an op (``opcode``), input and output tensors with shapes and dtypes, and in addition a
name, the module it belongs to and, when the model carries one, the user's source line.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any

from tvm_explorer.frontends.base import lazy
from tvm_explorer.frontends.model import SubgraphInfo, TensorInfo


@dataclass
class GraphNode:
    """One node of an ONNX graph or a PyTorch FX graph."""

    id: int
    op_index: int
    opcode: str  # ONNX op_type (``Conv``) or ATen op (``aten.conv2d.default``)
    inputs: list[TensorInfo]
    outputs: list[TensorInfo]
    options: dict = field(default_factory=dict)  # attributes / scalar arguments, as text
    name: str = ""  # ONNX node name, or PyTorch ``module.path/node``
    module: str = ""  # module hierarchy the node belongs to (``backbone.layer1.conv``)
    module_class: str = ""  # PyTorch: the innermost module's class (``Conv2d``)
    source: tuple[str, int] | None = None  # the innermost model-code frame (file, line)
    stack: tuple[tuple[str, int, str], ...] = ()  # every frame (file, line, function), entry first
    subgraph: int = 0
    explorer_key: tuple[str, str] | None = None  # Model Explorer's (graph id, node id): see layer_table

    @property
    def label(self) -> str:
        """``node 12 Conv`` (how messages and the document name the node)."""
        return f"node {self.op_index} {self.opcode}"


@dataclass
class GraphModel:
    """A model read by a frontend: its nodes, graph inputs/outputs and how to import it."""

    kind: str  # "onnx" | "torch"
    path: str
    sha256: str
    layers: list[GraphNode]
    subgraphs: list[SubgraphInfo]
    payload: Any = None  # the onnx.ModelProto / torch.export.ExportedProgram (untyped libraries)
    document_path: str = "model.graph"
    notes: list[str] = field(default_factory=list)  # header lines of the model document
    node_ids: dict = field(default_factory=dict)  # frontend's own: which nodes a graph holds
    declared_inputs: list = field(default_factory=list)
    """(name, shape) of each input as the model declares it: open dimensions are strings
    (``H``, ``s0``, ``?``), None an input with no shape at all (``frontends/input_shapes.py``)."""
    pinned: dict = field(default_factory=dict)
    """``--input-shape``: input name -> the sizes its open dimensions were pinned to."""

    @property
    def name(self) -> str:
        """The model's file name."""
        return os.path.basename(self.path)

    def layer(self, subgraph: int, op_index: int) -> GraphNode:
        """The node at ``op_index``."""
        return self.layers[op_index]


Frame = tuple[str, int, str]  # (file, 1-based line, function)


def stack_frames(stack_trace: str | None) -> tuple[Frame, ...]:
    """Every ``File "…", line N, in f`` frame of a Python stack trace, entry point first."""
    if not stack_trace:
        return ()
    frames = []
    for line in stack_trace.splitlines():
        line = line.strip()
        if not line.startswith('File "'):
            continue
        try:
            file = line[len('File "') : line.index('"', len('File "'))]
            rest = line[line.index('"', len('File "')) + 1 :]
            number = int(rest.split("line", 1)[1].split(",", 1)[0].strip())
        except (ValueError, IndexError):
            continue
        function = rest.split(", in ", 1)[1].strip() if ", in " in rest else ""
        if 0 < number < MAX_LINE:  # a line number, not metadata that only parses as one
            frames.append((file, number, function[:MAX_FUNCTION]))
    return tuple(frames)


def model_frame(frames: tuple[Frame, ...]) -> int | None:
    """The index in ``frames`` of the innermost frame in model code (``is_model_code``): the
    line of the model that made the node; None when no frame is."""
    for i in range(len(frames) - 1, -1, -1):
        if is_model_code(frames[i][0]):
            return i
    return None


def source_and_stack(stack_trace: str | None) -> tuple[tuple[str, int] | None, tuple[Frame, ...]]:
    """A node's ``source`` (the innermost model-code frame) and its whole ``stack``."""
    frames = stack_frames(stack_trace)
    at = model_frame(frames)
    return (None if at is None else frames[at][:2]), frames


def user_frame(stack_trace: str | None) -> tuple[str, int] | None:
    """The innermost frame of ``stack_trace`` in model code: what "the line of the model
    that made it" means (docs/provenance.md, "Source lines")."""
    return source_and_stack(stack_trace)[0]


MAX_LINE = 10**8
MAX_FUNCTION = 200
_INSTALLED = ("/site-packages/", "/dist-packages/")
_PYTHON_LIBRARY = ("/lib/python3", "/lib64/python3")
MODEL_LIBRARIES = (
    "transformers/models/",
    "diffusers/models/",
    "timm/models/",
    "torchvision/models/",
    "ultralytics/nn/",
)
"""Parts of installed packages that are model code: the model definitions of model libraries
(``transformers/models/llama/modeling_llama.py``). The rest of an installed package (``torch``,
``torch/nn/modules``, ``transformers/activations.py``, ``transformers/integrations``,
``transformers/masking_utils.py``) is the framework a model is written with."""


def is_model_code(file: str) -> bool:
    """Whether a frame's file is model code: the user's own files, and the model definitions
    of an installed model library (``MODEL_LIBRARIES``); not Python's library, not other
    installed packages, not generated code (``<eval_with_key>``, ``<frozen …>``)."""
    if not file or file.startswith("<"):
        return False
    path = file.replace("\\", "/")
    for marker in _INSTALLED:
        if marker in path:
            inside = path.rsplit(marker, 1)[1]
            return inside.startswith(MODEL_LIBRARIES)
    return not any(part in path for part in _PYTHON_LIBRARY)


def declared_inputs(model: GraphModel) -> list:
    """(name, shape) of each input as the model declares it (``GraphModel.declared_inputs``)."""
    return model.declared_inputs


# What the FRONTEND of every graph kind (frontends/onnx, torch, nn) takes alike:
render_graph_document = lazy("tvm_explorer.frontends.graph_document", "render_document")
"""``Frontend.render_document``: the model document of a ``GraphModel``."""
same_graph_by_loading = lazy("tvm_explorer.frontends.reference_run", "check_same_graph_by_loading")
"""``ReferenceEngine.check_same_graph``: the reference model loaded by the same frontend."""

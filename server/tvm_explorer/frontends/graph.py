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

from tvm_explorer.frontends.tflite.loader import SubgraphInfo, TensorInfo


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
    source: tuple[str, int] | None = None  # the user's own frame (file, line)
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
    payload: object = None  # the onnx.ModelProto / torch.export.ExportedProgram
    document_path: str = "model.graph"
    notes: list[str] = field(default_factory=list)  # header lines of the model document
    node_ids: dict = field(default_factory=dict)  # frontend's own: which nodes a graph holds

    @property
    def name(self) -> str:
        """The model's file name."""
        return os.path.basename(self.path)

    def layer(self, subgraph: int, op_index: int) -> GraphNode:
        """The node at ``op_index``."""
        return self.layers[op_index]


def user_frame(stack_trace: str | None) -> tuple[str, int] | None:
    """The innermost frame of ``stack_trace`` that is the user's own code (not torch, TVM,
    onnx or the Python library): what "the line of forward() that made it" means."""
    if not stack_trace:
        return None
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
        if 0 < number < MAX_LINE:  # a line number, not metadata that only parses as one
            frames.append((file, number))
    for file, number in reversed(frames):
        if not _library_file(file):
            return file, number
    return None


MAX_LINE = 10**8
_LIBRARY_PARTS = ("/site-packages/", "/dist-packages/", "/lib/python3", "<frozen", "<string>")


def _library_file(file: str) -> bool:
    return any(part in file for part in _LIBRARY_PARTS) or file.startswith("<")

"""The graph document's shape (docs/graph.md, "The graph document"), as the graph app reads it:
each type here is mirrored, field for field, by ``vscode-extension/webview/graph/types.ts``
(``tests/lsp/test_protocol_names.py`` compares their field names)."""

from __future__ import annotations

from typing import Any, TypedDict

from tvm_explorer.graphview.places import PlaceEntry
from tvm_explorer.history.pipeline import Pipeline


class _TensorFields(TypedDict):
    name: str
    type: str
    const: bool


class Tensor(_TensorFields, total=False):
    """An input or output tensor of a layer (``quantization``: an int8 tensor's scale)."""

    quantization: str


class Metrics(TypedDict):
    """The per-layer figures the overlays color by (null: none for this layer)."""

    time: float | None
    share: float | None
    code: int | None
    workspace: int | None
    memory: int | None
    flops: float | None
    error: float | str | None  # relative to the layer's budget; "inf" for an infinite error
    kernels: int | None
    registers: int | None
    coverage: str | None
    schedule: str | None
    tuning: str | None


class NodeNumerics(TypedDict):
    """A layer's numerics (``numerics.json``), summed up for the layer panel."""

    summary: str
    observed: bool
    diverges: bool
    first: bool
    max_abs: float | None
    max_rel: float | None
    cosine: float | None
    hint: str | None
    reference: str


class _GraphNodeFields(TypedDict):
    id: str
    subgraph: int
    op_index: int
    opcode: str
    name: str
    module: str
    module_class: str
    source: str | None
    group: str | None
    attributes: dict[str, str]
    inputs: list[Tensor]
    outputs: list[Tensor]
    kernels: list[str]
    metrics: Metrics
    cost: str | None
    numerics: NodeNumerics | None


class GraphNode(_GraphNodeFields, total=False):
    """A layer (``places``: only when asked for; ``fold``: the node it is drawn folded into;
    ``tuning``: its kernels' tuning, a line each, in a ``--tune`` bundle)."""

    places: list[PlaceEntry]
    fold: str | None
    tuning: str


class IONode(TypedDict):
    """A graph input or output."""

    id: str
    kind: str  # input | output
    name: str
    type: str


class Edge(TypedDict):
    """A tensor from one node to another."""

    source: str
    target: str
    tensor: str
    type: str


class Repeat(TypedDict):
    """A repeated module's family: the paths written as one, this one's place, how many."""

    pattern: str
    index: int
    count: int


class Group(TypedDict):
    """A scope (module) of the model, drawn as a box around its layers."""

    id: str
    label: str
    path: str
    parent: str | None
    size: int
    repeat: Repeat | None


class Overlay(TypedDict):
    """An overlay the app colors by (``note``: why it is not available)."""

    id: str
    label: str
    scale: str  # linear | log | category | budget
    unit: str
    available: bool
    note: str | None


class GraphModel(TypedDict):
    """The compiled model and how."""

    file: str
    kind: str
    unit: str
    target: str
    sha256: str
    tool: dict[str, Any]
    created: str


class KernelInfo(TypedDict):
    """A kernel: the layers it computes, its costs in words, how it was scheduled."""

    layers: list[str]
    summary: str
    schedule: str


class GraphDocument(TypedDict):
    """The whole graph document."""

    format: str
    version: int
    model: GraphModel
    nodes: list[GraphNode]
    io: list[IONode]
    edges: list[Edge]
    groups: list[Group]
    overlays: list[Overlay]
    kernels: dict[str, KernelInfo]
    costs_note: str
    pipeline: Pipeline

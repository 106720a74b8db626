"""What every model kind reads a model into, whatever the kind: the types the rest of the
product names a loaded model, its layers and its tensors by.

A TFLite model is a ``tflite.loader.LoadedModel`` of ``LayerInfo`` operators; an ONNX, PyTorch or
``tvm.relax.frontend.nn`` model a ``graph.GraphModel`` of ``GraphNode`` nodes. Both describe
their tensors and subgraphs with ``TensorInfo`` and ``SubgraphInfo``, and both are a ``Model``
of ``Layer`` s: code outside ``frontends/`` names these, never a kind's own classes.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol


@dataclass(frozen=True)
class TensorInfo:
    """A tensor as the model document shows it."""

    index: int
    name: str
    shape: tuple[int | str, ...]  # str: a symbolic dimension (ONNX, PyTorch)
    dtype: str
    is_constant: bool
    quantized: bool = False
    scales: tuple[float, ...] = ()  # quantization scale(s): one, or one per channel
    zero_points: tuple[int, ...] = ()


@dataclass
class SubgraphInfo:
    """A subgraph's name, inputs and outputs."""

    index: int
    name: str
    inputs: list[TensorInfo]
    outputs: list[TensorInfo]


class Layer(Protocol):
    """One layer of a loaded model (a TFLite operator, an ONNX or FX node): the unit every
    provenance answer points back to."""

    id: int
    subgraph: int
    op_index: int
    opcode: str
    inputs: list[TensorInfo]
    outputs: list[TensorInfo]
    options: dict

    @property
    def name(self) -> str:
        """The TF scope, node name or module path a layer is shown by (a bundle keeps it as ``display_name``)."""
        ...

    @property
    def label(self) -> str:
        """``op 12 CONV_2D`` / ``node 12 Conv``: how messages name the layer."""
        ...


class Model(Protocol):
    """A model file read by its kind's frontend (``frontends.load_any``): its file, its layers
    in the order TVM's importer converts them, its subgraphs."""

    path: str
    sha256: str
    pinned: dict
    """``--input-shape``: input name -> the sizes it is imported with."""

    @property
    def kind(self) -> str:
        """``tflite`` | ``onnx`` | ``torch`` | ``nn``: as the bundle's manifest records it."""
        ...

    @property
    def name(self) -> str:
        """The model's file name."""
        ...

    @property
    def layers(self) -> Sequence[Layer]: ...

    @property
    def subgraphs(self) -> Sequence[SubgraphInfo]: ...

    def layer(self, subgraph: int, op_index: int) -> Layer:
        """The layer of operator/node ``op_index`` in ``subgraph``."""
        ...

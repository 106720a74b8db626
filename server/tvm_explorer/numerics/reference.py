"""The reference a compiled model is compared with: the model's own framework run on the
same inputs, keeping every intermediate tensor by name.

One engine per model kind, chosen by the file's suffix (each frontend's ``reference``):

- ``.tflite``: the LiteRT interpreter (``frontends/tflite/litert.py``);
- ``.onnx``: onnxruntime, every node output made a graph output (``frontends/onnx/onnx_runtime.py``);
- ``.pt2``: eager PyTorch, the program's graph run node by node (``frontends/torch/eager.py``).

Every engine names tensors the way the model's loader names the layers' outputs, so a layer
output and its reference value meet by name. A ``--reference`` is another file of the same
kind and graph; ``check_same_graph`` names the first tensor it lacks or types differently.
"""

from __future__ import annotations

import os

import numpy as np

from tvm_explorer.errors import ExplorerError
from tvm_explorer.frontends import frontend_for, frontend_of
from tvm_explorer.frontends.reference_run import Quantization, ReferenceRun

__all__ = ["Quantization", "ReferenceRun", "check_same_graph", "describe", "quantization_of", "run_reference"]


def describe(path: str | os.PathLike) -> str:
    """``LiteRT interpreter on m.tflite`` / ``onnxruntime 1.31.1 on m.onnx`` / ``eager PyTorch
    2.13.0 on m.pt2``: what the report says it compared with."""
    return frontend_for(path).reference.describe(path)


def check_same_graph(model, reference_path: str) -> None:
    """Raise ExplorerError naming the first tensor (a main-graph input or a layer output of
    ``model``) that the reference lacks or shapes/types differently."""
    frontend = frontend_of(model)
    if frontend_for(reference_path) is not frontend:
        raise ExplorerError(
            f"{reference_path}: the reference must be a {frontend.suffix} model like {model.path} (the same graph)"
        )
    frontend.reference.check_same_graph(model, reference_path)


def run_reference(path: str | os.PathLike, inputs: dict[str, np.ndarray]) -> ReferenceRun:
    """Run the reference model at ``path`` on ``inputs`` (by input name), keeping every tensor."""
    return frontend_for(path).reference.run(path, inputs)


def quantization_of(path: str | os.PathLike) -> dict[str, Quantization]:
    """Every quantized tensor's parameters in the model at ``path`` (nothing is run)."""
    return frontend_for(path).reference.quantization_of(path)

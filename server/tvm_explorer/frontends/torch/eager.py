"""The PyTorch reference: the exported program run eagerly, node by node, keeping every
node's output.

The layers of a ``.pt2`` are the nodes of its decomposed ATen graph, the graph TVM converts
(``frontends/torch/loader.py``). The reference runs exactly that graph with
``torch.fx.Interpreter``: every ATen op executes eagerly on the CPU with PyTorch's own
kernels, and each node's output is kept under the node's name (``name[k]`` for the k-th
element of a node returning several tensors), the name the loader gives the layer's output.
Parameters, buffers and constants are fed in the order of the program's signature.
"""

from __future__ import annotations

import os

import numpy as np

from tvm_explorer.errors import ExplorerError
from tvm_explorer.frontends.reference_run import ReferenceRun, engine_on


def engine() -> str:
    """``eager PyTorch 2.13.0+cpu``."""
    import torch

    return f"eager PyTorch {torch.__version__}"


def _lifted_args(program, inputs: dict[str, np.ndarray], path: str) -> list:
    import torch

    state, constants = program.state_dict, program.constants
    args = []
    for spec in program.graph_signature.input_specs:
        kind, name = spec.kind.name, getattr(spec.arg, "name", None)
        if kind == "USER_INPUT":
            if name not in inputs:
                raise ExplorerError(f"{path}: input '{name}' has no value")
            args.append(torch.from_numpy(np.ascontiguousarray(inputs[name])))
        elif spec.target in state:
            args.append(state[spec.target])
        elif spec.target in constants:
            args.append(constants[spec.target])
        else:
            raise ExplorerError(f"{path}: the program's {kind.lower()} '{spec.target}' has no value")
    return args


def run_eager(path: str | os.PathLike, inputs: dict[str, np.ndarray]) -> ReferenceRun:
    """Run the decomposed program saved at ``path`` on ``inputs`` (by input name)."""
    from tvm_explorer.frontends.torch.loader import load_pt2

    path = os.fspath(path)
    program = load_pt2(path).payload  # decomposed; a ModelError names the file
    import torch
    import torch.fx

    tensors: dict[str, np.ndarray] = {}

    class Keeping(torch.fx.Interpreter):
        def run_node(self, node):
            value = super().run_node(node)
            if node.op == "call_function":
                values = value if isinstance(value, (list, tuple)) else [value]
                for k, v in enumerate(values):
                    if isinstance(v, torch.Tensor):
                        key = node.name if len(values) == 1 else f"{node.name}[{k}]"
                        tensors[key] = v.detach().cpu().numpy().copy()
            return value

    args = _lifted_args(program, inputs, path)
    try:
        with torch.no_grad():
            Keeping(program.graph_module).run(*args)
    except ExplorerError:
        raise
    except Exception as err:  # noqa: BLE001 - whatever an ATen op raises
        raise ExplorerError(
            f"{path}: PyTorch failed to run the program eagerly ({' '.join(str(err).split())[:300]})"
        ) from None
    return ReferenceRun(path, tensors, {})


def describe(path) -> str:
    """What ``--numerics`` compares a PyTorch program with (``ReferenceEngine.describe``)."""
    return engine_on(engine(), path)

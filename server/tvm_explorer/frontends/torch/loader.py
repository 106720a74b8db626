"""Read a ``torch.export`` ExportedProgram (a ``.pt2`` file, or one in memory) into a
``GraphModel``: one node per ``call_function`` of the decomposed graph TVM converts, with its
ATen op, ``nn_module_stack`` path and class, shapes and dtypes, and the user's source line
from its ``stack_trace``.
"""

from __future__ import annotations

import hashlib
import logging
import os
import warnings

from tvm_explorer.errors import ModelError
from tvm_explorer.frontends.graph import GraphModel, GraphNode, source_and_stack
from tvm_explorer.frontends.model import SubgraphInfo, TensorInfo

DOCUMENT_PATH = "model.fxgraph"
TORCH_PIN = "torch==2.13.0"


def require_torch(path: str):
    """The ``torch`` module, or ModelError saying how to install the optional extra."""
    try:
        import torch
    except ImportError:
        raise ModelError(
            f"{path}: compiling a PyTorch program needs PyTorch, which is not installed; "
            f"install the extra: pip install -e '.[torch]' (CPU build, {TORCH_PIN})"
        ) from None
    return torch


def load_pt2(path: str | os.PathLike) -> GraphModel:
    """Load a saved ExportedProgram; ModelError names the file if it cannot be loaded."""
    from tvm_explorer.frontends.onnx.loader import read_bytes
    from tvm_explorer.frontends.torch.safe_load import load_exported_program

    path = os.fspath(path)
    data = read_bytes(path, "a saved torch.export program (.pt2)")
    require_torch(path)
    # torch logs its own failed attempts (with tracebacks) and deprecation notes: our one
    # message says what matters.
    log = logging.getLogger("torch.export")
    level = log.level
    try:
        log.setLevel(logging.CRITICAL)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            program = load_exported_program(path, data)  # the bytes read: no second open
    except ModelError:  # a pickle or a string torch would evaluate, refused: named already
        raise
    except Exception as err:  # noqa: BLE001 - zip, pickle and version errors alike
        text = " ".join(str(err).split())[:300] or type(err).__name__
        raise ModelError(
            f"{path}: not a loadable torch.export program (.pt2 written by "
            f"torch.export.save): {type(err).__name__}: {text}"
        ) from None
    finally:
        log.setLevel(level)
    return describe_program(program, path, hashlib.sha256(data).hexdigest())


def decomposed(program):
    """The program as TVM's importer converts it (it runs the default decompositions unless
    the program holds sparse tensors)."""
    import torch

    tensors = [t for _, t in program.named_buffers()] + [t for _, t in program.named_parameters()]
    tensors += list(program.constants.values())
    if any(isinstance(t, torch.Tensor) and t.layout != torch.strided for t in tensors):
        return program
    # torch's own deprecation notes (a FutureWarning about its pytree LeafSpec) are not the
    # user's to act on.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        warnings.simplefilter("ignore", DeprecationWarning)
        return program.run_decompositions()


def describe_program(program, path: str, sha256: str | None = None) -> GraphModel:
    """A ``GraphModel`` of the decomposed ``program`` (kept as the model's payload)."""
    saved = {n.name for n in program.graph.nodes if n.op == "call_function"}
    try:
        program = decomposed(program)
    except Exception as err:  # noqa: BLE001
        raise ModelError(
            f"{path}: PyTorch could not decompose the program: {' '.join(str(err).split())[:300]}"
        ) from None
    graph = program.graph
    if sha256 is None:
        sha256 = hashlib.sha256(str(graph).encode()).hexdigest()
    index: dict[str, int] = {}
    params = {
        spec.arg.name
        for spec in program.graph_signature.input_specs
        if getattr(spec.arg, "name", None) and spec.kind.name != "USER_INPUT"
    }

    def tensors(node) -> list[TensorInfo]:
        val = node.meta.get("val")
        vals = val if isinstance(val, (list, tuple)) else [val]
        out = []
        for k, v in enumerate(vals):
            name = node.name if len(vals) == 1 else f"{node.name}[{k}]"
            shape = tuple(int(d) if str(d).lstrip("-").isdigit() else str(d) for d in getattr(v, "shape", ()))
            dtype = str(getattr(v, "dtype", "?")).replace("torch.", "")
            out.append(TensorInfo(index.setdefault(name, len(index)), name, shape, dtype, node.name in params))
        return out

    nodes: list[GraphNode] = []
    user_inputs, outputs = [], []
    for node in graph.nodes:
        if node.op == "placeholder" and node.name not in params:
            user_inputs.extend(tensors(node))
        elif node.op == "output":
            for arg in node.all_input_nodes:
                outputs.extend(tensors(arg))
        elif node.op == "call_function":
            nodes.append(_node(node, len(nodes), tensors))
            saved_name = _saved_node(node, saved)
            if saved_name is not None:
                nodes[-1].explorer_key = ("graph", saved_name)
    model = GraphModel(
        "torch", path, sha256, nodes, [SubgraphInfo(0, "forward", user_inputs, outputs)], program, DOCUMENT_PATH
    )
    model.notes = [f"decomposed ATen graph as TVM converts it; {len(params)} parameter(s)/buffer(s)"]
    model.declared_inputs = [(t.name, t.shape) for t in user_inputs]
    model.node_ids = {id(node): i for i, node in enumerate(n for n in graph.nodes if n.op == "call_function")}
    return model


def _saved_node(node, saved: set[str]) -> str | None:
    """The node of the program as saved (before the decompositions TVM's importer runs) that
    ``node`` was made from: the innermost of its ``from_node`` sources, which is what Model
    Explorer's ExportedProgram adapter shows (graph ``graph``, node id = that FX node's name).
    Several decomposed nodes may share one (``linear`` → ``permute`` + ``addmm``)."""
    sources = node.meta.get("from_node") or []
    name = None
    while sources:
        name = getattr(sources[0], "name", None)
        sources = getattr(sources[0], "from_node", None) or []
    if name in saved:
        return name
    return node.name if node.name in saved else None


def _node(node, nid: int, tensors) -> GraphNode:
    stack = node.meta.get("nn_module_stack") or {}
    path, cls = "", ""
    if stack:
        path, kind = list(stack.values())[-1]
        cls = (kind if isinstance(kind, str) else getattr(kind, "__name__", str(kind))).rsplit(".", 1)[-1]
        path = _clean_path(str(path))
        cls = cls if path else ""  # the root module is the program itself
    inputs = []
    for arg in node.all_input_nodes:
        inputs.extend(tensors(arg))
    source, stack = source_and_stack(node.meta.get("stack_trace"))
    return GraphNode(
        id=nid,
        op_index=nid,
        opcode=_op_name(node.target),
        inputs=inputs,
        outputs=tensors(node),
        options=_options(node),
        name=f"{path}/{node.name}" if path else node.name,
        module=path,
        module_class=cls,
        source=source,
        stack=stack,
    )


def _op_name(target) -> str:
    """``aten.convolution.default`` for ATen ops, ``getitem`` for Python builtins."""
    text = str(target)
    return getattr(target, "__name__", text) if text.startswith("<") else text


def _clean_path(path: str) -> str:
    """``L['self'].backbone.conv`` / ``L__self___backbone_conv`` forms → ``backbone.conv``."""
    for prefix in ("L['self'].", "L['self']"):
        if path.startswith(prefix):
            return path[len(prefix) :]
    return path


def _options(node) -> dict:
    """Non-tensor arguments by their schema names (``stride=[1,1]``)."""
    import torch.fx

    schema = getattr(node.target, "_schema", None)
    names = [a.name for a in schema.arguments] if schema is not None else []
    out = {}
    for i, arg in enumerate(node.args):
        if isinstance(arg, torch.fx.Node) or (
            isinstance(arg, (list, tuple)) and any(isinstance(a, torch.fx.Node) for a in arg)
        ):
            continue
        out[names[i] if i < len(names) else f"arg{i}"] = _text(arg)
    for key, arg in node.kwargs.items():
        if not isinstance(arg, torch.fx.Node):
            out[key] = _text(arg)
    return out


def _text(value) -> str:
    if isinstance(value, (list, tuple)):
        return "[" + ",".join(_text(v) for v in value) + "]"
    if isinstance(value, float):
        return f"{value:g}"
    return str(value).replace(" ", "").replace("torch.", "")


def describe_in_memory(program, example_args=None, name: str = "model.pt2") -> GraphModel:
    """A ``torch.export.ExportedProgram``, or an ``nn.Module`` exported here with
    ``example_args`` (a tuple of tensors), described as a program saved as ``name``."""
    torch = require_torch(name)
    if isinstance(program, torch.nn.Module):
        if example_args is None:
            raise TypeError("Capture.from_torch(module, example_args, bundle): example_args needed")
        program = torch.export.export(program, tuple(example_args))
    return describe_program(program, name)

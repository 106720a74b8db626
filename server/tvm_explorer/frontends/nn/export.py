"""Export a ``tvm.relax.frontend.nn`` module with provenance: TVM's own ``Exporter`` builds the
Relax IRModule, with a BlockBuilder that learns, at every binding the module emits, which
``nn.Module`` emitted it (its attribute path, ``layers.0.attn.q_proj``) and the line of the
user's code that called the op (the innermost frame outside TVM and tvm-explorer: the user's
``forward``). Each emitted binding is one node of the model (a ``GraphNode``): the op it
computes, its module path and class, its tensors and its source line. The IR is the stock
export (the same exporter, the same builder calls) plus spans.
"""

from __future__ import annotations

import dataclasses
import hashlib
import os
import sys
import threading
from types import FrameType

import numpy as np

from tvm_explorer.errors import ModelError
from tvm_explorer.frontends.graph import GraphModel, GraphNode
from tvm_explorer.frontends.model import SubgraphInfo, TensorInfo

DOCUMENT_PATH = "model.nngraph"
PARAM_SEED = 0
_EXPORT_LOCK = threading.Lock()


def _package_dir(module) -> str:
    return os.path.dirname(os.path.abspath(module.__file__)) + os.sep


def module_paths(root) -> dict[int, tuple[str, str]]:
    """``id(module) -> (attribute path, class name)`` for every module under ``root``
    (``ModuleList`` children by index, ``ModuleDict`` children by key)."""
    from tvm.relax.frontend import nn

    out: dict[int, tuple[str, str]] = {}

    def walk(module, path: str) -> None:
        if id(module) in out:
            return
        out[id(module)] = (path, type(module).__name__)
        if isinstance(module, nn.ModuleList):
            children = [(str(i), m) for i, m in enumerate(module)]
        elif isinstance(module, nn.ModuleDict):
            children = list(module.items())
        else:
            children = [(k, v) for k, v in vars(module).items() if isinstance(v, nn.Module)]
        for name, child in children:
            if isinstance(child, nn.Module):
                walk(child, f"{path}.{name}" if path else name)

    walk(root, "")
    return out


class _Site:
    """Where an emit happens: the innermost module method on the stack, the innermost frame of
    the user's code (``source``), and every frame from the spec's method inward (``stack``:
    ``(file, line, function)``, the user's entry first; TVM's own nn frames below it are kept,
    as PyTorch's stack keeps ``torch/nn/modules``)."""

    def __init__(self, paths: dict[int, tuple[str, str]]):
        import tvm

        ours = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))) + os.sep
        self.paths = paths
        self.tvm = _package_dir(tvm)
        self.internal = (self.tvm, ours)  # TVM's nn internals, and tvm_explorer

    def __call__(self):
        module = source = None
        stack: list[tuple[str, int, str]] = []
        frame: FrameType | None = sys._getframe(2)
        while frame is not None:
            code = frame.f_code
            file = os.path.abspath(code.co_filename)
            if code.co_name == "_emit_method" and file.startswith(self.tvm):
                break  # the exporter calling the spec's method: the entry point is below
            if module is None:
                owner = frame.f_locals.get("self")
                if owner is not None and id(owner) in self.paths:
                    module = self.paths[id(owner)]
            internal = file.startswith(self.internal) or code.co_filename.startswith("<")
            if source is None and not internal:
                source = (file, frame.f_lineno)
            if not file.startswith(self.internal[1]):
                stack.append((file, frame.f_lineno, code.co_name))
            frame = frame.f_back
        stack.reverse()
        while stack and stack[0][0].startswith(self.tvm):  # TVM's wrappers around the entry
            stack.pop(0)
        return module, source, tuple(stack)


def _opcode(value) -> str:
    from tvm import relax

    if isinstance(value, relax.Call):
        op = value.op
        name = getattr(op, "name", None) or getattr(op, "name_hint", None) or type(op).__name__
        if name in ("relax.call_tir", "relax.call_dps_packed") and value.args:
            callee = value.args[0]
            return f"{name} {getattr(callee, 'name_hint', '') or getattr(callee, 'global_symbol', '')}".strip()
        return str(name)
    return {"Tuple": "tuple", "TupleGetItem": "get_item"}.get(type(value).__name__, type(value).__name__)


def _tensor_types(ty) -> list[tuple[tuple, str]]:
    from tvm import relax, tirx

    if isinstance(ty, relax.TensorType):
        shape = getattr(ty, "shape", None)
        values = list(shape.values) if shape is not None and hasattr(shape, "values") else []
        dims = tuple(int(d) if isinstance(d, tirx.IntImm) else str(d) for d in values)
        return [(dims, str(ty.dtype))]
    if isinstance(ty, relax.TupleType):
        return [t for field in ty.fields for t in _tensor_types(field)]
    return []


class _Recording:
    """What the export learned: the nodes, and which node each emitted variable is."""

    def __init__(self, paths):
        self.site = _Site(paths)
        self.nodes: list[GraphNode] = []
        self.var_node: dict[int, int] = {}
        self.names: dict[int, list[str]] = {}  # handle(var) -> its tensor names
        self._taken: set[str] = set()
        self._node_names: set[str] = set()
        self._index: dict[str, int] = {}
        self.keep: list = []

    def tensor_names(self, var, count: int) -> list[str]:
        from tvm_explorer.provenance.spans import handle

        key = handle(var)
        if key not in self.names:
            base = var.name or "t"
            names = []
            for k in range(count):
                name = base if count == 1 else f"{base}.{k}"
                n = 1
                while name in self._taken:
                    name = f"{base}_{n}" if count == 1 else f"{base}_{n}.{k}"
                    n += 1
                self._taken.add(name)
                names.append(name)
            self.names[key] = names
            self.keep.append(var)
        return self.names[key]

    def tensors(self, var) -> list[TensorInfo]:
        types = _tensor_types(var.ty)
        names = self.tensor_names(var, len(types))
        return [
            TensorInfo(self._index.setdefault(name, len(self._index)), name, shape, dtype, False)
            for name, (shape, dtype) in zip(names, types)
        ]

    def emitted(self, var, value, name_hint: str) -> None:
        from tvm import relax

        from tvm_explorer.provenance.spans import handle

        module, source, stack = self.site()
        if module is None:
            return  # the exporter's own plumbing (outputs, parameter unpacking)
        path, cls = module
        nid = len(self.nodes)
        inputs = []
        args = list(value.args) if isinstance(value, relax.Call) else []
        if isinstance(value, relax.Tuple):
            args = list(value.fields)
        elif isinstance(value, relax.TupleGetItem):
            args = [value.tuple_value]
        for arg in args:
            if isinstance(arg, relax.Var):
                inputs.extend(self.tensors(arg))
        hint = name_hint or var.name
        base = f"{path}/{hint}" if path else hint
        name, n = base, 0
        while name in self._node_names:  # one name per node, as in a PyTorch graph
            n += 1
            name = f"{base}_{n}"
        self._node_names.add(name)
        self.nodes.append(
            GraphNode(
                id=nid,
                op_index=nid,
                opcode=_opcode(value),
                inputs=inputs,
                outputs=self.tensors(var),
                name=name,
                module=path,
                module_class=cls if path else "",
                source=source,
                stack=stack,
            )
        )
        self.var_node[handle(var)] = nid
        self.keep.append(var)


def _recording_exporter(recording: _Recording):
    from tvm import relax
    from tvm.relax.frontend.nn.exporter import Exporter

    class RecordingBuilder(relax.BlockBuilder):
        """TVM's BlockBuilder, telling ``recording`` about every binding emitted."""

        def emit(self, expr, name_hint: str = ""):
            var = super().emit(expr, name_hint)
            recording.emitted(var, expr, name_hint)
            return var

    class RecordingExporter(Exporter):
        def __init__(self, debug: bool) -> None:
            super().__init__(debug)
            self.builder = RecordingBuilder()

    return RecordingExporter


def export_recorded(module, spec, label: str):
    """``(IRModule, params, recording)``: the module exported by TVM's own exporter, every
    binding it emitted recorded. ModelError names the model on failure."""
    from tvm.relax.frontend.nn import spec as nn_spec

    recording = _Recording(module_paths(module))
    try:
        with _EXPORT_LOCK:
            full_spec = nn_spec.ModuleSpec.from_raw(spec, module)
            mod, params, ext_mods = _recording_exporter(recording)(debug=False).build(full_spec)
    except ModelError:
        raise
    except Exception as err:  # noqa: BLE001 - the user's module or TVM's exporter failed
        where = ""
        if recording.nodes:
            last = recording.nodes[-1]
            src = f" at {os.path.basename(last.source[0])}:{last.source[1]}" if last.source else ""
            where = f" after node {last.op_index} ({last.opcode} {last.name}{src})"
        text = " ".join(str(err).split())[:400] or type(err).__name__
        raise ModelError(f"{label}: TVM's nn exporter failed{where}: {type(err).__name__}: {text}") from None
    if ext_mods:
        raise ModelError(f"{label}: the module uses nn.ExternModule(s), which a bundle cannot hold")
    weights = {name for name, _ in params}
    for node in recording.nodes:  # parameters are the model's constants (bound as such)
        node.inputs = [dataclasses.replace(t, is_constant=True) if t.name in weights else t for t in node.inputs]
    return mod, params, recording


def parameter_arrays(params, label: str) -> dict[str, np.ndarray]:
    """Every parameter's data; one without data (a module built from a config) gets seeded
    random values (normal, std 0.02), so that the model can be compiled and run."""
    rng = np.random.default_rng(PARAM_SEED)
    out = {}
    for name, param in params:
        shape = [int(d) if str(d).lstrip("-").isdigit() else None for d in param.shape]
        if any(d is None for d in shape):
            raise ModelError(f"{label}: parameter {name} has a symbolic shape {list(param.shape)}; give it data")
        data = param.data
        if data is None:
            sizes = [d for d in shape if d is not None]  # all of them (checked above)
            array = (rng.standard_normal(sizes) * 0.02).astype(param.dtype)
        else:
            array = data.numpy()
        out[name] = array
    return out


def describe_nn(module, spec, label: str, sha256: str | None) -> GraphModel:
    """A ``GraphModel`` of the module: one node per binding its methods emit."""
    from tvm import relax

    mod, params, recording = export_recorded(module, spec, label)
    funcs = {gv.name_hint: f for gv, f in mod.functions.items() if isinstance(f, relax.Function)}
    first = funcs.get("main") or next((f for n, f in funcs.items() if not n.startswith("_")), None)
    n_inputs = int(first.attrs["num_input"]) if first is not None and first.attrs and "num_input" in first.attrs else 0
    inputs = [t for p in list(first.params)[:n_inputs] for t in recording.tensors(p)] if first is not None else []
    outputs = []
    if first is not None and isinstance(getattr(first.body, "body", None), relax.Var):
        outputs = recording.tensors(first.body.body)
    model = GraphModel(
        "nn",
        label,
        sha256 or "",
        recording.nodes,
        [SubgraphInfo(0, "main", inputs, outputs)],
        (module, spec),
        DOCUMENT_PATH,
    )
    n_params = len(params)
    with_data = sum(1 for _, p in params if p.data is not None)
    model.notes = [
        f"tvm.relax.frontend.nn module, exported by TVM's nn exporter; {n_params} parameter(s), "
        f"{with_data} with data, {n_params - with_data} given seeded random values",
        *module_tree(module, recording.nodes),
    ]
    return model


def module_tree(root, nodes: list[GraphNode]) -> list[str]:
    """The module tree as header lines: each module's class and how many ops it emitted."""
    counts: dict[str, int] = {}
    for node in nodes:
        counts[node.module] = counts.get(node.module, 0) + 1
    lines = ["module tree (ops emitted directly by each module):"]
    for path, cls in module_paths(root).values():  # depth first, in declaration order
        depth = path.count(".") + (1 if path else 0)
        label = path.rsplit(".", 1)[-1] if path else "(root)"
        ops = counts.get(path, 0)
        lines.append(f"  {'  ' * depth}{label} ({cls}){f': {ops} op(s)' if ops else ''}")
    return lines


def sha256_of(path: str, factory: str) -> str:
    with open(path, "rb") as fh:
        return hashlib.sha256(fh.read() + b"\0" + factory.encode()).hexdigest()


def fingerprint(model: GraphModel) -> str:
    """A model built in memory has no file: its nodes (ops, names, types) stand in for one."""
    text = "\n".join(f"{n.opcode} {n.name} {[(t.shape, t.dtype) for t in n.inputs + n.outputs]}" for n in model.layers)
    return hashlib.sha256(text.encode()).hexdigest()


def load_nn(path) -> GraphModel:
    """Run ``FILE.py:FACTORY`` (``factory.run_factory``) and describe the module it builds."""
    from tvm_explorer.frontends.nn.factory import run_factory, split_factory

    module, spec = run_factory(os.fspath(path))
    parts = split_factory(os.fspath(path))
    assert parts is not None  # run_factory accepted the path
    file, factory = parts
    return describe_nn(module, spec, os.fspath(path), sha256_of(file, factory))


def describe_in_memory(module, spec, label: str) -> GraphModel:
    """An ``nn.Module`` and its spec, built in this process: described under ``label``, its
    fingerprint standing for a file's SHA-256."""
    model = describe_nn(module, spec, label, None)
    model.sha256 = fingerprint(model)
    return model

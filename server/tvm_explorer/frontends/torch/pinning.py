"""``--input-shape`` for a ``torch.export`` program: its dynamic dimensions (``s0``,
``2*s1``) solved for the sizes given, checked against the ranges the program was exported
for, and the program exported again at those sizes, so that TVM's importer, the model
document and the numerics all see one static program (the graph, module paths and source
lines are the same: ``torch.export`` keeps node metadata when it traces the program's own
module)."""

from __future__ import annotations

import warnings

from tvm_explorer.errors import ExplorerError, ModelError
from tvm_explorer.frontends.graph import GraphModel


def _user_inputs(program) -> list:
    """The placeholder nodes of the user's inputs, in order."""
    users = set(program.graph_signature.user_inputs)
    return [n for n in program.graph.nodes if n.op == "placeholder" and n.name in users]


def _whole(value) -> bool:
    import sympy

    return bool(sympy.sympify(value).is_integer)


def _solve(model: GraphModel, program, shapes: dict[str, tuple[int, ...]]) -> dict:
    """{symbol: size} from the pinned inputs' dimensions; ExplorerError names a size that no
    whole value of a symbol gives, or one outside the exported range."""
    import sympy
    import torch

    equations, symbols = [], set()
    for node in _user_inputs(program):
        if node.name not in shapes:
            continue
        for i, (dim, size) in enumerate(zip(node.meta["val"].shape, shapes[node.name])):
            if isinstance(dim, torch.SymInt):
                expr = dim.node.expr
                equations.append((node.name, i, expr, size))
                symbols |= expr.free_symbols
    if not equations:
        return {}
    solutions = sympy.solve([sympy.Eq(e, s) for _, _, e, s in equations], sorted(symbols, key=str), dict=True)
    values = solutions[0] if solutions else None
    if values is None or not all(_whole(v) for v in values.values()):
        for name, i, expr, size in equations:
            alone = sympy.solve(sympy.Eq(expr, size), dict=True)
            if not alone or not all(_whole(v) for v in alone[0].values()):
                raise ExplorerError(
                    f"--input-shape {name}=…: dimension {i} of input '{name}' is {expr} in {model.path}; "
                    f"no whole size of {', '.join(sorted(map(str, expr.free_symbols)))} makes it {size}"
                )
        raise ExplorerError(
            "--input-shape: the sizes given contradict each other where the inputs share a dimension ("
            + "; ".join(f"'{name}' dimension {i} is {expr}" for name, i, expr, _ in equations)
            + ")"
        )
    for name, i, expr, size in equations:
        for sym in expr.free_symbols:
            bounds = program.range_constraints.get(sym)
            value = int(values.get(sym, -1))
            if bounds is not None and not (bounds.lower <= value <= bounds.upper):
                upper = "∞" if str(bounds.upper) in ("oo", "int_oo") else bounds.upper
                needs = "is outside" if expr == sym else f"needs {sym} = {value}"
                raise ExplorerError(
                    f"--input-shape {name}=…: dimension {i} of input '{name}' is {expr}, which {model.path} was "
                    f"exported for with {sym} in [{bounds.lower}, {upper}]; {size} {needs}"
                )
    return {sym: int(v) for sym, v in values.items()}


def pin_inputs(model: GraphModel, shapes: dict[str, tuple[int, ...]]) -> GraphModel:
    """The model's program exported again with every user input at a fixed size."""
    import torch
    from torch.utils import _pytree as pytree

    from tvm_explorer.frontends.torch.loader import describe_program

    program = model.payload
    values = _solve(model, program, shapes)
    example = []
    for node in _user_inputs(program):
        val = node.meta.get("val")
        if not isinstance(val, torch.Tensor):
            raise ExplorerError(
                f"--input-shape: input '{node.name}' of {model.path} is not a tensor; it cannot be pinned"
            )
        dims = []
        for i, dim in enumerate(val.shape):
            if isinstance(dim, torch.SymInt):
                left = dim.node.expr.subs(values)
                if left.free_symbols:
                    raise ExplorerError(
                        f"--input-shape: dimension {i} of input '{node.name}' is {dim.node.expr} in {model.path} "
                        f"and no --input-shape fixes {', '.join(sorted(map(str, left.free_symbols)))}; pin "
                        f"'{node.name}' too"
                    )
                dims.append(int(left))
            else:
                dims.append(int(dim))
        example.append(torch.zeros(dims, dtype=val.dtype))
    args, kwargs = pytree.tree_unflatten(example, program.call_spec.in_spec)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            static = torch.export.export(program.module(), tuple(args), kwargs)
    except Exception as err:  # noqa: BLE001 - torch's own reason, in one line
        raise ModelError(
            f"{model.path}: PyTorch could not export the program again at the pinned sizes "
            f"({type(err).__name__}: {' '.join(str(err).split())[:300]})"
        ) from None
    pinned = describe_program(static, model.path, model.sha256)
    pinned.declared_inputs = model.declared_inputs
    pinned.pinned = {name: tuple(shape) for name, shape in shapes.items()}
    return pinned

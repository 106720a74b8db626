"""A dynamic dimension TVM cannot compile, named in the model's terms: TVM 0.27's
``DispatchSortScan`` stops with ``non-symbolic shape is not supported for now`` when a sort
or scan (``cumsum`` of a causal mask, ``argsort``, ``topk``) reads a tensor whose shape it
does not know, which is what a ``torch.export.Dim`` sequence length becomes after import."""

from __future__ import annotations

from tvm import relax, tirx

from tvm_explorer.provenance.spans import read_span

SIGN = "non-symbolic shape is not supported"
_SORT_SCAN = ("relax.cumsum", "relax.cumprod", "relax.sort", "relax.argsort", "relax.topk")


def _static(expr) -> bool:
    shape = getattr(getattr(expr, "ty", None), "shape", None)
    if shape is None or not hasattr(shape, "values"):
        return False
    return all(isinstance(d, tirx.IntImm) for d in shape.values)


def unknown_shape_origin(message: str, relax_mod) -> int | None:
    """The origin set of the first sort/scan whose input shape is not static, when ``message``
    is ``DispatchSortScan``'s failure on it; else None."""
    if relax_mod is None or SIGN not in message:
        return None
    for func in relax_mod.functions.values():
        if not isinstance(func, relax.Function):
            continue
        for block in func.body.blocks:
            for binding in block.bindings:
                value = binding.value
                if (
                    isinstance(value, relax.Call)
                    and getattr(value.op, "name", "") in _SORT_SCAN
                    and not _static(value.args[0])
                ):
                    got = read_span(binding) or read_span(value) or read_span(binding.var)
                    if got is not None:
                        return got[0]
    return None


def dynamic_dimension(layer, model) -> str:
    """``dimension s27 (dim 1 of input 'ids')``: the first symbolic dimension of the layer's
    inputs, and which model input carries it."""
    symbols = [d for t in layer.inputs for d in t.shape if isinstance(d, str)]
    if not symbols:
        return "a dimension whose size is known only at run time"
    symbol = symbols[0]
    for t in model.subgraphs[0].inputs if model.subgraphs else ():
        for axis, d in enumerate(t.shape):
            if d == symbol:
                return f"dynamic dimension {symbol} (dim {axis} of model input '{t.name}')"
    return f"dynamic dimension {symbol}"

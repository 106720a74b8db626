"""Rewrites in our Relax pipeline, outside TVM, for constructs TVM 0.27 imports but cannot
build for every target: each makes the module compute what the model's framework computes,
and each is a pass of its own in the bundle (docs/provenance.md, "Workarounds in the
pipeline").

``BoolCumsumAsInteger``: TVM's PyTorch importer turns ``torch.cumsum`` of a bool tensor (the
packed-sequence test of Hugging Face's causal masks: ``(diff != 1).cumsum(-1)``) into a
``cumsum`` whose result is bool, lowered to ``out[i] = out[i-1] + x[i]`` on bools and later
compared as bools. TVM's LLVM code generator cannot add or compare booleans (``Check failed:
(t.MatchesCode(DLDataTypeCode::kDLFloat))`` in ``CreateAdd``, then ``fcmp`` on ``i1``). The
pass gives the ``cumsum`` the result type PyTorch gives it, int64 (the count of true values
so far): what the exported program says (its node is typed int64), so the model computes what
the reference computes; the ops that read it are typed again from it.
"""

from __future__ import annotations

import tvm
from tvm import relax

_CUMSUM = tvm.ir.Op.get("relax.cumsum")


def _dtype(expr) -> str:
    return str(getattr(expr.ty, "dtype", "")) if getattr(expr, "ty", None) is not None else ""


def _with_span(call, span):
    return relax.Call(call.op, list(call.args), call.attrs, list(call.ty_args), span)


@relax.expr_functor.mutator
class _BoolCumsum(relax.PyExprMutator):
    def visit_call_(self, call):
        call = super().visit_call_(call)
        if not (isinstance(call, relax.Call) and call.op.same_as(_CUMSUM)) or _dtype(call.args[0]) != "bool":
            return call
        if str(call.attrs.dtype or "bool") not in ("bool", "void"):
            return call
        axis = call.attrs.axis
        return _with_span(relax.op.cumsum(call.args[0], None if axis is None else int(axis), "int64"), call.span)


@tvm.transform.module_pass(opt_level=0, name="BoolCumsumAsInteger")
def bool_cumsum_as_integer(mod, _ctx):
    """The pass (see the module's docstring); returns ``mod`` itself when nothing matches."""
    targets = [gv for gv, f in mod.functions.items() if isinstance(f, relax.Function) and _has_bool_cumsum(f)]
    if not targets:
        return mod
    out = tvm.IRModule(dict(mod.functions.items()), attrs=mod.attrs)
    for gv in targets:
        out[gv] = _BoolCumsum(out).visit_expr(mod[gv])
    return out


def _has_bool_cumsum(func) -> bool:
    found = []

    def visit(expr):
        if isinstance(expr, relax.Call) and expr.op.same_as(_CUMSUM) and _dtype(expr.args[0]) == "bool":
            found.append(expr)

    relax.analysis.post_order_visit(func, visit)
    return bool(found)


def with_workarounds(pipeline):
    """``pipeline`` preceded by the rewrites above (a ``Sequential``: its steps are recorded
    as the pipeline's)."""
    return tvm.transform.Sequential([bool_cumsum_as_integer, pipeline], name="sequential")

"""Exact origins: one PrimFunc per call site.

LegalizeOps deduplicates identical PrimFuncs, so one ``add`` may serve several layers and
its statements have several origins. With ``--exact-origins`` we give every call site its
own copy right after LegalizeOps (``add``, ``add_tvmx1``, ...). The copies compute the same
thing, so outputs are unchanged, but the generated code grows with the number of call sites
(see docs/provenance.md).
"""

from __future__ import annotations

import tvm
import tvm_ffi
from tvm import relax, tirx

from tvm_explorer.capture.pipeline_steps import PipelineSteps


def _fresh_stores(func):
    """A copy of ``func`` whose BufferStore nodes are new objects (spans can differ)."""

    def store(node, mutator):
        value = mutator.mutate(node.value)
        indices = [mutator.mutate(i) for i in node.indices]
        return tirx.BufferStore(node.buffer, value, indices, node.span)

    body = tvm_ffi.structural_mutate(func.body, [(tirx.BufferStore, store)])
    return func.with_body(body)


def _copy_type(src, dst) -> None:
    """Give a node we just built the (already inferred) type of the node it replaces."""
    if src.ty is not None:
        tvm.ir.Expr.ty.set(dst, src.ty)


def clone_shared_primfuncs(mod) -> int:
    """Give every ``call_tir`` site of a shared PrimFunc its own copy, in place; returns
    the number of copies made."""
    call_tir = tvm.ir.Op.get("relax.call_tir")
    sites: dict[str, int] = {}
    names = {gv.name_hint for gv in mod.functions}
    made = 0
    for gv, func in list(mod.functions.items()):
        if not isinstance(func, relax.Function):
            continue

        def rewrite(call, mutator):
            nonlocal made
            call = mutator.default_mutate(call)
            if not (isinstance(call, relax.Call) and call.op.same_as(call_tir)):
                return call
            callee = call.args[0]
            if not isinstance(callee, relax.GlobalVar) or not isinstance(mod[callee], tirx.PrimFunc):
                return call
            count = sites.get(callee.name_hint, 0)
            sites[callee.name_hint] = count + 1
            if count == 0:
                return call
            i = count
            while f"{callee.name_hint}_tvmx{i}" in names:
                i += 1
            name = f"{callee.name_hint}_tvmx{i}"
            names.add(name)
            clone_gv = relax.GlobalVar(name)
            _copy_type(callee, clone_gv)
            mod[clone_gv] = _fresh_stores(mod[callee])
            made += 1
            args = [clone_gv] + list(call.args[1:])
            new_call = relax.Call(call.op, args, call.attrs, call.ty_args, call.span)
            _copy_type(call, new_call)
            return new_call

        new_func = tvm_ffi.structural_mutate(func, [(relax.Call, rewrite)])
        if not new_func.same_as(func):
            mod[gv] = new_func
    return made


@tvm.ir.instrument.pass_instrument
class ExactOrigins(PipelineSteps):
    """Pass instrument: right after the pipeline's LegalizeOps, clone shared PrimFuncs."""

    def __init__(self):
        super().__init__()
        self.copies = 0

    def after_step(self, mod, info):
        if info.name == "LegalizeOps":
            self.copies += clone_shared_primfuncs(mod)

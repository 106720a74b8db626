"""Pipelines for the regression-gate tests: TVM's CPU pipeline plus a real loop schedule for
matrix products, and the same with the schedule left out for one kernel (a change that makes
one layer several times slower, as a pull request that drops a schedule would).

The untuned CPU kernel of a FULLY_CONNECTED reads its transposed weight column by column (the
reduction loop innermost, a stride of one row per step); the schedule moves the reduction loop
outside the output loop, so the weight streams row by row and the inner loop vectorizes."""

import tvm
from tvm import relax, s_tir
from tvm.relax.backend.cpu_generic import pipeline as cpu_generic


BLOCKS = ("matmul", "conv2d_nhwc")


def _block(sch):
    for name in BLOCKS:
        try:
            return sch.get_sblock(name)
        except Exception:  # noqa: BLE001 - the function has no block of that name
            continue
    return None


def _kernels_in_call_order(mod) -> list[str]:
    """The PrimFuncs with a matrix product or convolution block, in the order ``main`` calls them."""
    order: list[str] = []

    def visit(expr):
        if isinstance(expr, relax.Call) and expr.op.same_as(tvm.ir.Op.get("relax.call_tir")):
            name = expr.args[0].name_hint
            if name not in order:
                order.append(name)

    relax.analysis.post_order_visit(mod["main"], visit)
    return [name for name in order if _block(s_tir.Schedule(mod[name])) is not None]


def _reorder(func):
    """The last output loop innermost, inside the reduction loops: the weight and the output
    are then read and written contiguously and the inner loop vectorizes."""
    sch = s_tir.Schedule(func)
    block = _block(sch)
    loops = sch.get_loops(block)
    kinds = [iv.iter_type for iv in sch.get(block).iter_vars]
    spatial = [lp for lp, kind in zip(loops, kinds) if kind == 0]
    reduction = [lp for lp, kind in zip(loops, kinds) if kind == 2]
    sch.reorder(*reduction, spatial[-1])
    return sch.mod["main"]


def _schedule_pass(leave_out_last: bool):
    @tvm.transform.module_pass(opt_level=0, name="ScheduleMatmul")
    def schedule(mod, _ctx):
        kernels = _kernels_in_call_order(mod)
        if leave_out_last:
            kernels = kernels[:-1]
        for name in kernels:
            gv = mod.get_global_var(name)
            mod[gv] = _reorder(mod[gv]).with_attr("global_symbol", name)
        return mod

    return schedule


def _pipeline(target, leave_out_last: bool):
    return tvm.transform.Sequential(
        cpu_generic.library_dispatch_passes(target)
        + cpu_generic.legalize_passes(target)
        + [_schedule_pass(leave_out_last)]
        + cpu_generic.dataflow_lower_passes(target)
        + cpu_generic.finalize_passes(target),
        name="scheduled_pipeline",
    )


def scheduled(target):
    """TVM's CPU pipeline with every matrix product and convolution scheduled (the baseline)."""
    return _pipeline(target, leave_out_last=False)


def last_unscheduled(target):
    """The same, with the schedule left out for the last kernel the model calls that has one."""
    return _pipeline(target, leave_out_last=True)

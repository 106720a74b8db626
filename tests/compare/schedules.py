"""Pipelines for the regression-gate tests: TVM's CPU pipeline plus a real loop schedule for
matrix products and convolutions, and the same with the schedule left out for one kernel (a
change that makes one layer several times slower, as a pull request that drops a schedule would).

TVM's untuned CPU kernels keep the reduction loops innermost: a CONV_2D's inner loop reads its
HWIO weight with a stride of one output channel per step, a FULLY_CONNECTED's its transposed
weight with a stride of one row. The schedule moves the last output loop inside the reduction
loops, so weights and outputs are walked contiguously and the inner loop vectorizes: 4× faster
for the 3×3×32×32 convolution of tests/compare/test_gate.py, 50× for a 1024×1024 dense layer."""

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
    kinds = [iv.iter_type for iv in sch.get(block).iter_vars]  # one per loop (T.axis.remap of T.grid)
    spatial = [lp for lp, kind in zip(loops, kinds) if kind == 0]  # IterVar.DataPar
    reduction = [lp for lp, kind in zip(loops, kinds) if kind == 2]  # IterVar.CommReduce
    sch.reorder(*reduction, spatial[-1])
    return sch.mod["main"]


def _schedule_pass(leave_out_last: bool):
    @tvm.transform.module_pass(opt_level=0, name="ScheduleLoops")
    def schedule(mod, _ctx):
        mod = tvm.IRModule(
            dict(mod.functions.items()), attrs=mod.attrs
        )  # a new module: the input is the previous pass's output
        kernels = _kernels_in_call_order(mod)
        if leave_out_last:
            kernels = kernels[:-1]
        for name in kernels:
            gv = mod.get_global_var(name)
            mod[gv] = _reorder(mod[gv])
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

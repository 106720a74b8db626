"""Pipelines for the tests: TVM's CPU pipeline with a planted pass that turns the N-th Relax
``add`` into ``subtract`` (a silent arithmetic change at a known position), or every ``sigmoid``
into ``tanh`` (reduce's tests), and other ways a pipeline goes wrong."""

import tvm
from tvm import relax
from tvm.relax.backend.cpu_generic import pipeline as cpu_generic
from tvm.relax.expr_functor import PyExprMutator, mutator

ADD = tvm.ir.Op.get("relax.add")
SIGMOID = tvm.ir.Op.get("relax.sigmoid")


def _before_legalize(target, planted, name):
    """TVM's CPU pipeline with the ``planted`` pass right before LegalizeOps."""
    return tvm.transform.Sequential(
        cpu_generic.library_dispatch_passes(target)
        + [planted]
        + cpu_generic.legalize_passes(target)
        + cpu_generic.dataflow_lower_passes(target)
        + cpu_generic.finalize_passes(target),
        name=name,
    )


@mutator
class _Replace(PyExprMutator):
    """Every Relax call of ``op`` made ``replace(call)``, or only the ``which``-th (from 0)."""

    def __init__(self, mod, op, replace, which=None):
        super().__init__(mod)
        self.mod_ = mod
        self.op = op
        self.replace = replace
        self.which = which
        self.seen = 0

    def visit_call_(self, call):
        call = super().visit_call_(call)
        if call.op == self.op:
            self.seen += 1
            if self.which is None or self.seen - 1 == self.which:
                return self.replace(call)
        return call

    def transform(self):
        for gv, func in self.mod_.functions_items():
            if isinstance(func, relax.Function):
                self.builder_.update_func(gv, self.visit_expr(func))
        return self.builder_.get()


def planted_pass(which=1):
    @tvm.transform.module_pass(opt_level=0, name="PlantedAddToSubtract")
    def planted(mod, _ctx):
        return _Replace(mod, ADD, lambda call: relax.op.subtract(call.args[0], call.args[1]), which).transform()

    return planted


def with_planted_add(target):
    """TVM's CPU pipeline, the planted pass right before LegalizeOps."""
    return _before_legalize(target, planted_pass(1), "planted_pipeline")


def honest(target):
    """TVM's CPU pipeline as a module pass of our own."""

    @tvm.transform.module_pass(opt_level=0, name="my_pipeline")
    def my_pipeline(mod, _ctx):
        with target:
            return tvm.transform.Sequential(
                cpu_generic.library_dispatch_passes(target)
                + cpu_generic.legalize_passes(target)
                + cpu_generic.dataflow_lower_passes(target)
                + cpu_generic.finalize_passes(target)
            )(mod)

    return my_pipeline


def not_a_pass(target):
    return 42


def raises(target):
    raise ValueError("no pipeline for you")


NOT_CALLABLE = 3


def crashes(target):
    """TVM's CPU pipeline with a pass that dies of SIGSEGV, as a native crash inside TVM would."""
    import os
    import signal

    @tvm.transform.module_pass(opt_level=0, name="Segfaults")
    def segfaults(mod, _ctx):
        os.kill(os.getpid(), signal.SIGSEGV)
        return mod

    return _before_legalize(target, segfaults, "crashing_pipeline")


def broken(target):
    """A pipeline that cannot compile: nothing lowers the Relax operators."""
    return tvm.transform.Sequential([relax.transform.ToNonDataflow()], name="broken")


# -- a planted TIR pass --------------------------------------------------------------------
# It runs first in TVM's TIR pipeline but acts only while armed: the planted Relax pipeline
# arms it (its last pass), the TIR pipeline disarms it at its end. So it changes the real build
# of `with_planted_tir` and nothing else (the minimal lowering of snapshots does not arm it),
# like a TIR pass that misbehaves only on what the real pipeline hands it.
_ARMED = {"on": False}


def _planted_tir_func(func, _mod, _ctx):
    if not _ARMED["on"] or "add" not in str(func.attrs.get("global_symbol", "")):
        return func
    text = func.script()
    lines = text.split("\n")
    for i, line in enumerate(lines):
        if "] = " in line and " + " in line:
            lines[i] = line.replace(" + ", " - ", 1)
            break
    else:
        return func
    changed = tvm.script.from_source("\n".join(lines))
    return changed.with_attrs(func.attrs) if hasattr(changed, "with_attrs") else changed


def _install_planted_tir():
    from tvm.tirx import compilation_pipeline as tir_pipeline

    if getattr(tir_pipeline, "_planted", False):
        return
    original = tir_pipeline.PIPELINE_MAP["s_tir"]
    planted = tvm.tirx.transform.prim_func_pass(_planted_tir_func, opt_level=0, name="PlantedTIRSubtract")

    @tvm.transform.module_pass(opt_level=0, name="DisarmPlantedTIR")
    def disarm(mod, _ctx):
        _ARMED["on"] = False
        return mod

    def factory(**kwargs):
        pipeline, host, device = original(**kwargs)
        return tvm.transform.Sequential([planted, pipeline, disarm]), host, device

    tir_pipeline.PIPELINE_MAP["s_tir"] = factory
    tir_pipeline._planted = True


def with_planted_tir(target):
    """TVM's CPU pipeline; the TIR build after it subtracts where one `add` kernel adds."""
    _install_planted_tir()

    @tvm.transform.module_pass(opt_level=0, name="ArmPlantedTIR")
    def arm(mod, _ctx):
        _ARMED["on"] = True
        return mod

    return tvm.transform.Sequential(
        cpu_generic.library_dispatch_passes(target)
        + cpu_generic.legalize_passes(target)
        + cpu_generic.dataflow_lower_passes(target)
        + cpu_generic.finalize_passes(target)
        + [arm],
        name="planted_tir_pipeline",
    )


def with_planted_first_add(target):
    """TVM's CPU pipeline, a planted pass turning the first Relax ``add`` into ``subtract``
    right before LegalizeOps (for models with a single add)."""
    return _before_legalize(target, planted_pass(0), "planted_pipeline")


def sigmoid_to_tanh(target):
    """TVM's CPU pipeline with a planted pass, right before LegalizeOps, that computes every
    Relax ``sigmoid`` as ``tanh``: the model builds and runs, and its Sigmoid layers diverge
    from the reference (a silent numerical fault of one operator kind)."""

    @tvm.transform.module_pass(opt_level=0, name="PlantedSigmoidToTanh")
    def planted(mod, _ctx):
        return _Replace(mod, SIGMOID, lambda call: relax.op.tanh(call.args[0])).transform()

    return _before_legalize(target, planted, "planted_sigmoid_pipeline")


def _subtract_in_place(mod, _ctx):
    """The first legalized ``add`` kernel made to subtract, the way many user passes (and TVM's
    own Python passes) change a module: ``mod[gv] = f`` on the module they were handed."""
    for gv, func in list(mod.functions_items()):
        if isinstance(func, tvm.tirx.PrimFunc) and gv.name_hint.startswith("add"):
            text = func.script()
            if " + " in text:
                mod[gv] = tvm.script.from_source(text.replace(" + ", " - ", 1))
                break
    return mod


def with_in_place_planted_add(target):
    """TVM's CPU pipeline with an in-place pass right after FoldConstant (a pass that changed
    the module), before fusion."""
    planted = tvm.transform.module_pass(_subtract_in_place, opt_level=0, name="PlantedInPlace")
    legalize = cpu_generic.legalize_passes(target)
    return tvm.transform.Sequential(
        cpu_generic.library_dispatch_passes(target)
        + legalize[:3]
        + [planted]
        + legalize[3:]
        + cpu_generic.dataflow_lower_passes(target)
        + cpu_generic.finalize_passes(target),
        name="planted_in_place_pipeline",
    )


def cuda_unscheduled(target):
    """TVM's CUDA pipeline without dlight's schedules: the TIR build refuses the first kernel
    with no thread binding (a CUDA build failure of TVM's own)."""
    from tvm.relax.backend.cuda import pipeline as cuda

    legalize = [p for p in cuda.legalize_passes(target) if "ApplyDefaultSchedule" not in str(p.info.name)]
    return tvm.transform.Sequential(
        cuda.library_dispatch_passes(target)
        + legalize
        + cuda.dataflow_lower_passes(target)
        + cuda.finalize_passes(target),
        name="unscheduled_cuda",
    )


def cuda_small_gpu(target):
    """TVM's CUDA pipeline, then a check a user writes for a smaller GPU: at most 32 threads
    per block, failing on the first kernel dlight scheduled with more (a CUDA build failure
    inside the pipeline)."""
    import re

    from tvm.relax.backend.cuda import pipeline as cuda

    @tvm.transform.module_pass(opt_level=0, name="VerifySmallGPU")
    def verify(mod, _ctx):
        for gv, func in sorted(mod.functions_items(), key=lambda kv: kv[0].name_hint):
            if isinstance(func, tvm.tirx.PrimFunc):
                threads = [
                    int(n)
                    for n in re.findall(
                        r"T\.thread_binding\((?:T\.int64\()?(\d+)\)?, thread=\"threadIdx", func.script()
                    )
                ]
                if threads and max(threads) > 32:
                    raise ValueError(f"{gv.name_hint} needs {max(threads)} threads per block (at most 32)")
        return mod

    return tvm.transform.Sequential(
        cuda.library_dispatch_passes(target)
        + cuda.legalize_passes(target)
        + [verify]
        + cuda.dataflow_lower_passes(target)
        + cuda.finalize_passes(target),
        name="small_gpu",
    )

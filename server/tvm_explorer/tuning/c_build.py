"""Tuning for ``--target c``: MetaSchedule knows no target kind ``c`` ("Unsupported kind: c"),
so it tunes for the host's CPU (``llvm`` with its core count: the C is compiled for this
machine) in a design space without vectorization (TVM's C generator cannot write vectorized
index arithmetic: "Cannot convert type int32x32 to C type"), and each candidate is built as
``--target c`` and compiled to a library by the system C compiler, with TVM's C fixed as the
capture fixes it (``capture/c_source.py``). Module-level functions: MetaSchedule's builder
workers receive them by reference."""

from __future__ import annotations


def c_space(ms):
    """MetaSchedule's CPU rules, with ``ParallelizeVectorizeUnroll`` vectorizing nothing."""
    rules = []
    for rule in ms.schedule_rule.ScheduleRule.create("llvm"):
        if type(rule).__name__ == "ParallelizeVectorizeUnroll":
            rule = ms.schedule_rule.ParallelizeVectorizeUnroll(
                max_jobs_per_core=16, max_vectorize_extent=-1, unroll_max_steps=[0, 16, 64, 512], unroll_explicit=True
            )
        rules.append(rule)
    return ms.space_generator.PostOrderApply(sch_rules=rules, postprocs="llvm", mutator_probs="llvm")


def build_c(mod, _target, _params):
    """A candidate built as ``--target c`` (MetaSchedule's default build, with that target)."""
    import tvm
    import tvm.s_tir.tensor_intrin  # noqa: F401 - as MetaSchedule's own builder does
    from tvm.driver import build as tvm_build
    from tvm.s_tir.transform import RemoveWeightLayoutRewriteBlock

    mod = RemoveWeightLayoutRewriteBlock(skip_tensor_rewrite=True)(mod)
    return tvm_build(mod, target=tvm.target.Target("c"))


def export_c(rt_mod) -> str:
    """The candidate's C compiled to a shared library, as the capture compiles TVM's C."""
    import os
    import tempfile

    from tvm_explorer.capture.c_source import export_c_library

    path = os.path.join(tempfile.mkdtemp(prefix="tvm-explorer-candidate-"), "candidate.so")
    export_c_library(rt_mod, path, ["-O2"])
    return path

"""Tuning for ``--target cuda``: MetaSchedule's CUDA design space (its default rules for a cuda
target: thread bindings, shared-memory tiling, cooperative fetch, unrolling), sized by the
target's ``max_threads_per_block``, ``max_shared_memory_per_block`` and ``thread_warp_size``.

A candidate is built here without a GPU (TVM's CUDA code generator; with no CUDA runtime
loaded, the module keeps the CUDA source and the device that loads it compiles it for its own
GPU, TVM's cross-compile path), but it is only timed on a GPU: this machine's
(MetaSchedule's ``LocalRunner``) or a device of ``--rpc-tracker``'s key (its ``RPCRunner``).
Kernels the database does not schedule keep TVM's default CUDA schedule (dlight's rules, as in
every ``--target cuda`` compile): an unscheduled kernel cannot run on a GPU at all.
"""

from __future__ import annotations

import tvm

# What dlight assumes when a cuda target does not say (the capture's sm_80 target), for a GPU
# that is not here: the CUDA limits of every GPU since Volta.
LIMITS = {"max_shared_memory_per_block": 49152, "max_threads_per_block": 1024, "thread_warp_size": 32}


def is_cuda(target_name: str) -> bool:
    return (target_name.split() or [""])[0] == "cuda"


def tuning_target(target: tvm.target.Target, gpu=None) -> tvm.target.Target:
    """The cuda target MetaSchedule tunes for: the compile's architecture and, with a GPU here
    (``gpu``: costs.gpu.CudaPlan), that GPU's own limits; else the limits of ``LIMITS``."""
    config = dict(target.export())
    attrs: dict[str, object] = {"kind": "cuda", "arch": gpu.arch if gpu is not None else config.get("arch") or "sm_80"}
    attrs.update(LIMITS)
    if gpu is not None:
        dev = tvm.cuda(0)
        attrs["max_shared_memory_per_block"] = int(dev.max_shared_memory_per_block)
        attrs["max_threads_per_block"] = int(dev.max_threads_per_block)
        attrs["thread_warp_size"] = int(dev.warp_size)
    return tvm.target.Target(attrs, host="llvm")


def split_legalize(target: tvm.target.Target) -> tuple[list, list]:
    """TVM's CUDA legalize passes without dlight's ``ApplyDefaultSchedule``, and that pass:
    MetaSchedule tunes and applies between them; dlight then schedules what it left."""
    from tvm.relax.backend.cuda import pipeline as cuda

    passes = cuda.legalize_passes(target)
    dlight = [p for p in passes if p.info.name == "ApplyDefaultSchedule"]
    return [p for p in passes if p.info.name != "ApplyDefaultSchedule"], dlight


def default_schedule(func, target: tvm.target.Target):
    """``func`` with TVM's default CUDA schedule (the dlight rules of its CUDA pipeline): the
    ledger's "default" on a GPU, what an untuned ``--target cuda`` compile runs."""
    _, dlight = split_legalize(target)
    mod = tvm.IRModule({"main": func.with_attr("global_symbol", "main")})
    with target:
        for p in dlight:
            mod = p(mod)
    return mod["main"]


def use_compiler(gpu) -> None:
    """The builder's workers compile CUDA with TVM's callback, NVRTC by default: with only nvcc
    here (costs.gpu.CudaPlan says which), make them use nvcc."""
    import os

    if gpu is not None and gpu.compiler == "nvcc":
        os.environ.setdefault("TVM_CUDA_COMPILE_MODE", "nvcc")

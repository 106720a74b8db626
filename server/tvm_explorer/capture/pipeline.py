"""Targets, their real TVM pipelines, and getting generated source out of a build."""

from __future__ import annotations

import tvm
import tvm_ffi
from tvm import relax

from tvm_explorer.errors import ExplorerError

TARGETS = ("c", "llvm", "cuda")


def make_target(name: str, arch: str | None = None) -> tvm.target.Target:
    """The TVM target for one of ``TARGETS`` (``arch``: the CUDA architecture of the GPU the
    kernels will run on, when they are profiled; else sm_80). ``llvm`` takes options in the
    command-line form, ``"llvm -mtriple=aarch64-linux-gnu -mcpu=cortex-a76"``, to build for
    another machine (TVM 0.27 reads targets as a dict: the options become its keys)."""
    if name == "c":
        return tvm.target.Target("c")
    if name == "llvm":
        return tvm.target.Target("llvm")
    kind, *words = name.split() or [""]
    if kind == "llvm" and words:
        options = dict(w.lstrip("-").partition("=")[::2] for w in words)
        if not all(w.startswith("-") and "=" in w for w in words) or not all(options.values()):
            raise ExplorerError(f"--target {name!r}: options are -key=value (e.g. llvm -mtriple=aarch64-linux-gnu)")
        try:
            target = tvm.target.Target({"kind": "llvm", **options})
        except Exception as err:  # noqa: BLE001 - TVM's verdict on the options
            raise ExplorerError(f"--target {name!r}: {' '.join(str(err).split())[:300]}") from None
        _check_cpu(name, target, options.get("mcpu"))
        return target
    if name == "cuda":
        # sm_80 fixes the schedule rules' assumptions; no GPU is needed to generate source.
        # The shared memory per block is the value dlight falls back to (with a warning per
        # kernel) when the target does not say: the same schedules, no warnings.
        return tvm.target.Target(
            {"kind": "cuda", "arch": arch or "sm_80", "max_shared_memory_per_block": 49152}, host="llvm"
        )
    raise ExplorerError(
        f"unsupported target {name!r}; choose one of: {', '.join(TARGETS)} (llvm with options: 'llvm -mtriple=…')"
    )


def _check_cpu(name: str, target: tvm.target.Target, cpu: str | None) -> None:
    """LLVM quietly builds for a generic CPU when it does not know ``-mcpu`` (a typo would
    measure the wrong code): refuse it, naming the CPUs it knows for the triple."""
    if not cpu:
        return
    from tvm.target import codegen

    known = sorted(str(c) for c in codegen.llvm_get_cpu_archlist(target))
    if known and cpu not in known:
        shown = ", ".join(known[:12]) + (f" and {len(known) - 12} more" if len(known) > 12 else "")
        raise ExplorerError(f"--target {name!r}: unsupported target CPU {cpu!r} for this triple; LLVM knows {shown}")


def relax_pipeline(target_name: str, target: tvm.target.Target):
    """TVM's own Relax pipeline for the target (the fusing CPU one, or the CUDA backend's),
    preceded by our rewrites of constructs TVM cannot build (``capture/workarounds.py``)."""
    from tvm_explorer.capture.workarounds import with_workarounds

    if target_name == "cuda":
        return with_workarounds(relax.backend.cuda.get_default_pipeline(target))
    return with_workarounds(relax.backend.cpu_generic.get_default_pipeline(target))


def _placeholder_cuda_compile(code, *_):  # noqa: ARG001 - TVM's callback signature
    """Stands in for nvcc: source generation needs no GPU and no CUDA toolkit. (TVM calls it
    only where its CUDA runtime is loaded, with the source alone.)"""
    return bytearray(b"tvm-explorer: CUDA binary not built (source only)")


def enable_source_only_cuda() -> None:
    """Make CUDA builds return placeholder bytes instead of calling nvcc."""
    tvm_ffi.register_global_func("tvm_callback_cuda_compile", _placeholder_cuda_compile, override=True)


def enable_real_cuda(plan) -> None:
    """Make CUDA builds compile their kernels for this machine's GPU (``--profile``)."""
    tvm_ffi.register_global_func("tvm_callback_cuda_compile", plan.compile_callback(), override=True)


def build(mod, target_name: str, instruments=(), pipeline=None, cuda_plan=None):
    """Compile ``mod`` for ``target_name`` with TVM's real pipeline (or ``pipeline``, a Relax
    pipeline pass of the user's); returns the executable. ``cuda_plan`` (costs.gpu.CudaPlan):
    build real CUDA kernels for this machine's GPU instead of source only."""
    target = make_target(target_name, cuda_plan.arch if cuda_plan is not None else None)
    if target_name == "cuda" and cuda_plan is not None:
        enable_real_cuda(cuda_plan)
    elif target_name == "cuda":
        enable_source_only_cuda()
    with tvm.transform.PassContext(opt_level=3, instruments=list(instruments)):
        return tvm.compile(mod, target, relax_pipeline=pipeline or relax_pipeline(target_name, target))


def _all_modules(mod):
    seen, out, todo = set(), [], [mod]
    while todo:
        m = todo.pop(0)
        key = id(m)
        if key in seen:
            continue
        seen.add(key)
        out.append(m)
        todo.extend(list(m.imports))
    return out


def generated_sources(executable, target_name: str) -> dict[str, str]:
    """Generated source by kind: ``{"c": ...}``, or ``{"cuda": ..., "ll": ...}``."""
    out: dict[str, str] = {}
    for m in _all_modules(executable.mod):
        kind = m.kind
        wanted = {"c": ("c",), "llvm": ("ll",), "cuda": ("cuda",)}.get(kind)
        if not wanted:
            continue
        for fmt in wanted:
            try:
                src = m.inspect_source(fmt)
            except Exception:  # noqa: BLE001 - a module without that format
                src = ""
            if src:
                key = "ll" if fmt == "ll" else kind
                out.setdefault(key, src)
    return out

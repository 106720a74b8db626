"""Whether CUDA kernels can be profiled here, and how to build them so they can.

The explorer builds CUDA as source only (``sm_80``, a placeholder for nvcc). To time the
kernels, the build needs a real binary for the GPU that will run it: TVM's CUDA runtime must
be loaded (a CUDA driver), a GPU must be visible, and nvcc (or NVRTC from ``cuda-bindings``)
must be there to compile the kernels for that GPU's architecture.
"""

from __future__ import annotations

import importlib.util
import shutil
from dataclasses import dataclass

NO_GPU = "no CUDA GPU on this machine: profiling CUDA kernels needs one"


@dataclass
class CudaPlan:
    """How to build kernels that run on this machine's GPU."""

    arch: str  # "sm_86"
    compiler: str  # "nvcc" | "nvrtc"
    name: str  # the device's name

    def compile_callback(self):
        """A ``tvm_callback_cuda_compile`` that builds for this GPU."""
        from tvm.support import nvcc

        fmt = "cubin" if self.compiler == "nvrtc" else "fatbin"

        def compile_cuda(code, *_):
            return nvcc.compile_cuda(code, target_format=fmt, arch=self.arch, compiler=self.compiler)

        return compile_cuda


def cuda_plan() -> tuple[CudaPlan | None, str | None]:
    """``(plan, None)`` when CUDA kernels can be built and timed here, else ``(None, reason)``."""
    import tvm

    if not tvm.runtime.enabled("cuda"):
        return None, f"{NO_GPU} (TVM's CUDA runtime is not loaded: no CUDA driver)"
    dev = tvm.cuda(0)
    if not dev.exist:
        return None, NO_GPU
    if importlib.util.find_spec("cuda") is not None and importlib.util.find_spec("cuda.bindings") is not None:
        compiler = "nvrtc"
    elif shutil.which("nvcc"):
        compiler = "nvcc"
    else:
        return None, (
            "a CUDA GPU is here, but neither nvcc nor NVRTC (pip install cuda-bindings) to build kernels for it"
        )
    major, minor = str(dev.compute_version).split(".")[:2]
    return CudaPlan(f"sm_{major}{minor}", compiler, str(dev.device_name)), None

"""A kernel name as a profiler prints it (Nsight Systems/Compute, ``nvidia-smi``-era tools,
``perf``) resolved to the layers it computes: CUDA kernels (``fused_conv2d_add_relu_kernel``),
their demangled signatures (``…_kernel(float*, float*)``), and the CPU symbols of the same
PrimFunc (``__tvm_ffi_…``, ``…_compute_``)."""

from __future__ import annotations

import re
from dataclasses import dataclass

from tvm_explorer.bundle.reader import Bundle
from tvm_explorer.bundle.types import Origin

_ARGUMENTS = re.compile(r"\(.*\)\s*$")


@dataclass(frozen=True)
class KernelMatch:
    """Where a kernel is defined in a bundle's code documents, and the layers it computes."""

    name: str
    path: str
    start: int
    origins: list[Origin]


def _candidates(name: str) -> list[str]:
    bare = _ARGUMENTS.sub("", name.strip()).split("::")[-1].strip()
    bare = bare.removeprefix("void ").strip()
    names = [bare]
    for prefix in ("__tvm_ffi_", "__tvm_"):
        if bare.startswith(prefix):
            names.append(bare[len(prefix) :])
    for suffix in ("_compute_", "_kernel"):
        names += [n[: -len(suffix)] for n in list(names) if n.endswith(suffix)]
    names += [n + "_kernel" for n in list(names) if not n.endswith("_kernel")]
    return list(dict.fromkeys(n for n in names if n))


def find_kernel(bundle: Bundle, name: str) -> list[KernelMatch]:
    """The code documents' functions named ``name`` (kernel first, CPU entry after), each with
    its layers; empty when no function of the bundle has that name."""
    out: list[KernelMatch] = []
    for doc in bundle.documents:
        if doc.stage != "code":
            continue
        index = bundle.index(doc.path)
        for candidate in _candidates(name):
            found = [r for r in index.by_key(f"prim:{candidate}") if r.kind == "primfunc"]
            if found:
                r = found[0]
                out.append(KernelMatch(candidate, doc.path, r.start, bundle.origins(r.origin_set)))
                break
    return out


def known_kernels(bundle: Bundle) -> list[str]:
    """Every kernel and function name of the bundle's code documents, in document order."""
    names: list[str] = []
    for doc in bundle.documents:
        if doc.stage == "code":
            names += [r.key[len("prim:") :] for r in bundle.index(doc.path).ranges if r.kind == "primfunc"]
    return list(dict.fromkeys(names))

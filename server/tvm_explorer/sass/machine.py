"""``--sass``: the bundle's CUDA as machine code, joined to layers (the SASS document, its
index, and the ``sass.json`` section of per-kernel and per-layer facts)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from tvm_explorer.bundle.index import Range
from tvm_explorer.sass.build import Disassembly, disassemble
from tvm_explorer.sass.document import CudaLines, parse_listing, render
from tvm_explorer.sass.facts import KernelFacts, estimate_occupancy, launch_bounds, note, parse_ptxas

SECTION = "sass.json"
SCHEMA = 1


def document_path(arch: str) -> str:
    """Where the SASS of ``arch`` lives in a bundle."""
    return f"code/device.{arch}.sass"


@dataclass
class MachineCode:
    """What ``--sass`` adds to a bundle."""

    path: str
    text: str
    ranges: list[Range]
    section: dict


def machine_code(
    cuda_text: str,
    cuda_ranges: list[Range],
    layers_of: Callable[[int], tuple[int, ...]],
    arch: str,
    *,
    cuda_path: str = "code/device.cu",
    listing: Disassembly | None = None,
) -> MachineCode:
    """Compile and disassemble ``cuda_text`` for ``arch`` (or use ``listing``) and join every
    instruction to its layers (``layers_of(origin_set)``)."""
    got = listing or disassemble(cuda_text, arch)
    cuda_name = cuda_path.rsplit("/", 1)[-1]
    kernels = parse_listing(got.sass, cuda_name)
    facts = parse_ptxas(got.ptxas_log)
    bounds = launch_bounds(cuda_text)
    for kernel in kernels:
        f = facts.setdefault(kernel.name, KernelFacts(kernel.name))
        f.instructions = len(kernel.instructions)
        f.threads_per_block = bounds.get(kernel.name)
        estimate_occupancy(f, got.arch)
    header = [
        f"SASS for {got.arch} of {cuda_path}: nvcc {got.nvcc_version} -cubin -lineinfo, nvdisasm -gi.",
        f"Each instruction ends with the {cuda_name} line it came from (hover: its layer; F12: that line).",
    ]
    notes = {k.name: note(facts[k.name], got.arch) for k in kernels}
    doc = render(kernels, CudaLines(cuda_text, cuda_ranges), header, notes, cuda_name)
    per_layer: dict[int, dict] = {}
    kernel_rows = []
    for kernel in kernels:
        f = facts[kernel.name]
        counts: dict[int, int] = {}
        for origin_set in doc.instruction_sets.get(kernel.name, ()):
            for layer in layers_of(origin_set):
                counts[layer] = counts.get(layer, 0) + 1
        kernel_layers = sorted(counts, key=lambda k: (-counts[k], k))
        kernel_rows.append({**f.to_json(), "layers": kernel_layers})
        for layer, n in counts.items():
            row = per_layer.setdefault(
                layer, {"instructions": 0, "kernels": [], "registers": 0, "spilled": 0, "min_occupancy": None}
            )
            row["instructions"] += n
            row["kernels"].append(kernel.name)
            row["registers"] = max(row["registers"], f.registers)
            row["spilled"] += f.spill_stores + f.spill_loads
            if f.occupancy is not None:
                low = row["min_occupancy"]
                row["min_occupancy"] = f.occupancy if low is None else min(low, f.occupancy)
    section = {
        "schema_version": SCHEMA,
        "arch": got.arch,
        "nvcc": got.nvcc_version,
        "document": document_path(got.arch),
        "source": cuda_path,
        "kernels": kernel_rows,
        "layers": {str(k): v for k, v in sorted(per_layer.items())},
    }
    return MachineCode(document_path(got.arch), doc.text, doc.ranges, section)

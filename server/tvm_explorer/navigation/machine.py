"""What the editor says of machine code (``compile --sass``): a kernel's registers, spills,
shared memory and occupancy, on any line of that kernel in CUDA, SASS or TIR."""

from __future__ import annotations

from tvm_explorer.bundle.index import Range
from tvm_explorer.bundle.reader import Bundle
from tvm_explorer.bundle.sections.sass import SassKernel, kernel_facts
from tvm_explorer.inert import markdown as md


def kernel_at(bundle: Bundle, ranges: list[Range]) -> SassKernel | None:
    """The machine facts of the kernel enclosing ``ranges`` (innermost first), if recorded."""
    data = bundle.sass()
    if data is None:
        return None
    for rng in ranges:
        if rng.kind == "primfunc" and rng.key.startswith("prim:"):
            name = rng.key[len("prim:") :]
            found = kernel_facts(data, name) or kernel_facts(data, f"{name}_kernel")
            if found is not None:
                return found
    return None


def describe(kernel: SassKernel, arch: str) -> str:
    """One line: ``fused_conv2d_add_relu_kernel`` on sm_90: 56 registers, no spills, …"""
    spilled = kernel.get("spill_stores", 0) + kernel.get("spill_loads", 0)
    parts = [f"{kernel['registers']} registers", f"{spilled} B spilled" if spilled else "no spills"]
    if kernel.get("shared"):
        parts.append(f"{kernel['shared']} B shared")
    local = kernel.get("stack", 0) + kernel.get("local", 0)
    if local:
        parts.append(f"{local} B local")
    occupancy = kernel.get("occupancy")
    if occupancy is not None:
        parts.append(f"occupancy {occupancy:.0%} (limited by {md.text(kernel.get('occupancy_limit') or '?')})")
    parts.append(f"{kernel['instructions']} instructions")
    return f"Machine code of {md.code(kernel['name'])} on {md.text(arch)}: " + ", ".join(parts)


def hover_line(bundle: Bundle, ranges: list[Range]) -> str | None:
    """The hover's machine-code line for a position inside a kernel, or None."""
    kernel = kernel_at(bundle, ranges)
    data = bundle.sass()
    return describe(kernel, data["arch"]) if kernel is not None and data is not None else None

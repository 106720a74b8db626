"""The SASS document of a bundle: nvdisasm's listing made readable, each instruction joined to
its CUDA line and, through the CUDA document's index, to its layer.

Every instruction line ends with ``// device.cu:LINE`` (the CUDA line it came from; for code
inlined from a CUDA header, the ``device.cu`` line that called it). Its index range carries the
origins of the innermost CUDA range at that line and the key ``src:LINE``, by which the editor
goes one stage back to that exact line; each kernel is a ``primfunc`` range with the CUDA
kernel's key (``prim:NAME``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from tvm_explorer.bundle.index import Range

_SECTION = re.compile(r"^//-+ \.text\.(\S+)\s+-+")
_LOCATION = re.compile(r'^\s*//## File "([^"]+)", line (\d+)((?: inlined at "[^"]+", line \d+)*)')
_INLINED = re.compile(r'inlined at "([^"]+)", line (\d+)')
_INSTRUCTION = re.compile(r"^\s*/\*([0-9a-f]{4,})\*/\s+(.*?)\s*$")
_LABEL = re.compile(r"^(\.L_x_\d+):\s*$")
_SOURCE_KEY = "src:"


@dataclass
class Instruction:
    """One machine instruction: its address, text and CUDA line (1-based; 0 when none)."""

    address: str
    text: str
    cuda_line: int
    where: str  # the innermost location nvdisasm named, for code inlined from a header


@dataclass
class Kernel:
    """One kernel's instructions (and its branch labels, by the instruction they precede)."""

    name: str
    instructions: list[Instruction] = field(default_factory=list)
    labels: dict[int, list[str]] = field(default_factory=dict)


def parse_listing(listing: str, cuda_file: str = "device.cu") -> list[Kernel]:
    """The kernels of an ``nvdisasm -gi -c`` listing, in its order."""
    kernels: list[Kernel] = []
    current: Kernel | None = None
    cuda_line, where = 0, ""
    after_location = False
    for raw in listing.splitlines():
        m = _SECTION.match(raw)
        if m:
            current = Kernel(m.group(1))
            kernels.append(current)
            cuda_line, where = 0, ""
            continue
        if current is None:
            continue
        m = _LOCATION.match(raw)
        if m:
            chain = [(m.group(1), int(m.group(2)))] + [(f, int(n)) for f, n in _INLINED.findall(m.group(3))]
            ours = [n for f, n in chain if f.endswith("/" + cuda_file) or f == cuda_file]
            line = ours[-1] if ours else 0
            first_file = chain[0][0].rsplit("/", 1)[-1]
            # nvdisasm -gi names the inlined chain, then the caller's line on its own: keep both.
            if not (after_location and first_file == cuda_file and line == cuda_line):
                where = "" if first_file == cuda_file else f"{first_file}:{chain[0][1]}"
            cuda_line = line
            after_location = True
            continue
        after_location = False
        m = _INSTRUCTION.match(raw)
        if m:
            current.instructions.append(Instruction(m.group(1), m.group(2), cuda_line, where))
            continue
        m = _LABEL.match(raw.strip())
        if m:
            current.labels.setdefault(len(current.instructions), []).append(m.group(1))
    return [k for k in kernels if k.instructions]


class CudaLines:
    """The CUDA document's index, asked by line: the innermost range at each line's first
    character (one sweep over the nested ranges), and each kernel's range."""

    def __init__(self, text: str, ranges: list[Range]):
        ordered = sorted(ranges, key=lambda r: (r.start, -r.end))
        self.kernels = {r.key[len("prim:") :]: r for r in ordered if r.kind == "primfunc"}
        self._at_line: list[Range | None] = []
        stack: list[Range] = []
        k = 0
        pos = 0
        for line in text.split("\n"):
            first = pos + len(line) - len(line.lstrip(" \t"))
            while k < len(ordered) and ordered[k].start <= first:
                while stack and stack[-1].end <= ordered[k].start:
                    stack.pop()
                stack.append(ordered[k])
                k += 1
            while stack and stack[-1].end <= first:
                stack.pop()
            self._at_line.append(stack[-1] if stack and stack[-1].start <= first else None)
            pos += len(line) + 1

    def innermost(self, line: int) -> Range | None:
        """The innermost range containing the first non-blank character of 1-based ``line``."""
        return self._at_line[line - 1] if 1 <= line <= len(self._at_line) else None


@dataclass
class SassDocument:
    """The rendered document, its index ranges, and per kernel the origin set of each
    instruction (for the per-layer counts)."""

    text: str
    ranges: list[Range]
    instruction_sets: dict[str, list[int]]


def render(
    kernels: list[Kernel],
    cuda: CudaLines,
    header: list[str],
    kernel_notes: dict[str, str],
    cuda_name: str = "device.cu",
) -> SassDocument:
    """The SASS document: ``header`` comment lines, then each kernel (its note as a comment
    line, its label, its instructions with their CUDA lines)."""
    out: list[str] = [f"// {line}" if line else "//" for line in header]
    pos = sum(len(line) + 1 for line in out)
    ranges: list[Range] = []
    sets: dict[str, list[int]] = {}

    def emit(line: str) -> int:
        nonlocal pos
        out.append(line)
        start = pos
        pos += len(line) + 1
        return start

    for kernel in kernels:
        emit("")
        prim = cuda.kernels.get(kernel.name)
        kernel_set = prim.origin_set if prim is not None else 0
        first = emit(f"// {kernel.name}: {kernel_notes.get(kernel.name, '')}".rstrip(": "))
        emit(f"{kernel.name}:")
        kernel_sets = sets.setdefault(kernel.name, [])
        for i, ins in enumerate(kernel.instructions):
            for label in kernel.labels.get(i, ()):
                emit(f"{label}:")
            body = f"  /*{ins.address}*/  {ins.text}"
            note = f"{cuda_name}:{ins.cuda_line}" if ins.cuda_line else "no CUDA line"
            if ins.where:
                note += f" (inlined {ins.where})"
            line = f"{body:<64} // {note}"
            start = emit(line)
            got = cuda.innermost(ins.cuda_line) if ins.cuda_line else None
            origin_set = got.origin_set if got is not None and got.origin_set else kernel_set
            kernel_sets.append(origin_set)
            key = f"{_SOURCE_KEY}{ins.cuda_line}" if ins.cuda_line else f"prim:{kernel.name}"
            ranges.append(Range(start + 2, start + len(line), origin_set, "stmt", key))
        if prim is not None:
            ranges.append(Range(first, pos - 1, kernel_set, "primfunc", prim.key, prim.link))
    return SassDocument("\n".join(out) + "\n", ranges, sets)


def source_line(key: str) -> int | None:
    """The CUDA line (1-based) a SASS range's key names, or None."""
    if key.startswith(_SOURCE_KEY) and key[len(_SOURCE_KEY) :].isdigit():
        return int(key[len(_SOURCE_KEY) :])
    return None

"""Each kernel's machine facts from ptxas's own report (``nvcc --resource-usage``): registers
per thread, spills, stack (local memory), static shared memory, barriers; its threads per block
from the CUDA source's ``__launch_bounds__``; and an occupancy estimate for the architecture
(CUDA's occupancy rules: warps, registers, shared memory and blocks per multiprocessor)."""

from __future__ import annotations

import math
import re
from dataclasses import asdict, dataclass

_ENTRY = re.compile(r"Compiling entry function '([^']+)' for '(sm_\w+)'")
_PROPS = re.compile(r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads")
_USED = re.compile(r"Used (\d+) registers")
_SMEM = re.compile(r"(\d+) bytes smem")
_LMEM = re.compile(r"(\d+) bytes lmem")
_BARRIERS = re.compile(r"used (\d+) barriers")
_BOUNDS = re.compile(r"__launch_bounds__\((\d+)\)\s+(\w+)\s*\(")


@dataclass
class KernelFacts:
    """What ptxas says of one kernel, and the occupancy it allows."""

    name: str
    registers: int = 0
    spill_stores: int = 0
    spill_loads: int = 0
    stack: int = 0
    local: int = 0
    shared: int = 0
    barriers: int = 0
    threads_per_block: int | None = None
    instructions: int = 0
    occupancy: float | None = None
    occupancy_limit: str | None = None

    def to_json(self) -> dict:
        return asdict(self)


def parse_ptxas(log: str) -> dict[str, KernelFacts]:
    """Per kernel name, the facts of ptxas's ``--resource-usage`` report."""
    facts: dict[str, KernelFacts] = {}
    current: KernelFacts | None = None
    for line in log.splitlines():
        m = _ENTRY.search(line)
        if m:
            current = facts.setdefault(m.group(1), KernelFacts(m.group(1)))
            continue
        if current is None:
            continue
        if m := _PROPS.search(line):
            current.stack, current.spill_stores, current.spill_loads = map(int, m.groups())
        if m := _USED.search(line):
            current.registers = int(m.group(1))
            current.shared = _number(_SMEM, line)
            current.local = _number(_LMEM, line)
            current.barriers = _number(_BARRIERS, line)
    return facts


def _number(pattern: re.Pattern, line: str) -> int:
    m = pattern.search(line)
    return int(m.group(1)) if m else 0


def launch_bounds(cuda_source: str) -> dict[str, int]:
    """Threads per block of each kernel, from TVM's ``__launch_bounds__(N) NAME(``."""
    return {name: int(n) for n, name in _BOUNDS.findall(cuda_source)}


@dataclass(frozen=True)
class Multiprocessor:
    """One SM's limits (CUDA's occupancy calculator, per compute capability)."""

    max_threads: int
    max_blocks: int
    registers: int
    shared: int  # bytes a block's shared memory can be carved from, per SM
    reserved_shared: int  # bytes the system keeps per block
    max_registers_per_thread: int = 255


_SM = {
    75: Multiprocessor(1024, 16, 65536, 64 * 1024, 0),
    80: Multiprocessor(2048, 32, 65536, 164 * 1024, 1024),
    86: Multiprocessor(1536, 16, 65536, 100 * 1024, 1024),
    87: Multiprocessor(1536, 16, 65536, 164 * 1024, 1024),
    89: Multiprocessor(1536, 24, 65536, 100 * 1024, 1024),
    90: Multiprocessor(2048, 32, 65536, 228 * 1024, 1024),
    100: Multiprocessor(2048, 32, 65536, 228 * 1024, 1024),
    103: Multiprocessor(2048, 32, 65536, 228 * 1024, 1024),
    120: Multiprocessor(1536, 32, 65536, 100 * 1024, 1024),
}


def multiprocessor(arch: str) -> Multiprocessor | None:
    """The limits of ``sm_XX``, or None for an architecture this table does not know."""
    digits = re.sub(r"\D", "", arch)
    return _SM.get(int(digits)) if digits else None


def estimate_occupancy(facts: KernelFacts, arch: str) -> None:
    """Fill ``facts.occupancy`` (active warps / the SM's maximum) and what limits it."""
    sm = multiprocessor(arch)
    threads = facts.threads_per_block
    if sm is None or not threads:
        return
    warps = math.ceil(threads / 32)
    max_warps = sm.max_threads // 32
    limits = {"threads": sm.max_threads // (warps * 32), "blocks": sm.max_blocks}
    if facts.registers:
        per_warp = math.ceil(facts.registers * 32 / 256) * 256  # allocated per warp, 256 at a time
        limits["registers"] = (sm.registers // per_warp) // warps
    if facts.shared:
        per_block = math.ceil((facts.shared + sm.reserved_shared) / 128) * 128
        limits["shared memory"] = sm.shared // per_block
    blocks = min(limits.values())
    facts.occupancy = round(min(blocks * warps, max_warps) / max_warps, 4)
    facts.occupancy_limit = min(limits, key=lambda k: (limits[k], k != "registers"))


def note(facts: KernelFacts, arch: str) -> str:
    """A kernel's facts as one line of the SASS document."""
    parts = [f"{facts.instructions} instructions", f"{facts.registers} registers"]
    spilled = facts.spill_stores + facts.spill_loads
    parts.append(f"{spilled} B spilled" if spilled else "no spills")
    parts.append(f"{facts.shared} B shared")
    parts.append(f"{facts.stack + facts.local} B local")
    if facts.threads_per_block:
        parts.append(f"{facts.threads_per_block} threads/block")
    if facts.occupancy is not None:
        parts.append(f"occupancy {facts.occupancy:.0%} on {arch} (limited by {facts.occupancy_limit})")
    return ", ".join(parts)

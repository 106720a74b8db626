"""Compile generated CUDA to a cubin and disassemble it: NVIDIA's own tools, run here (no GPU)."""

from __future__ import annotations

import re
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

from tvm_explorer.errors import ExplorerError
from tvm_explorer.sass.tools import Tools, find_tools

DEFAULT_ARCH = "sm_90"  # the H100/H200 generation
_ARCH = re.compile(r"^sm_\d{2,3}[a-z]?$")


@dataclass(frozen=True)
class Disassembly:
    """What the tools said about one compile: the disassembly with line information (nvdisasm
    ``-gi``), ptxas's resource report (``--resource-usage``), and the versions used."""

    arch: str
    sass: str
    ptxas_log: str
    nvcc_version: str


def _run(argv: list[str], what: str, timeout: float) -> subprocess.CompletedProcess:
    try:
        proc = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        raise ExplorerError(f"--sass: {what} did not finish within {timeout:.0f} s") from None
    except OSError as err:
        raise ExplorerError(f"--sass: {what} could not be started: {err}") from None
    if proc.returncode != 0:
        lines = [line for line in (proc.stderr or proc.stdout).splitlines() if line.strip()]
        first = next((line for line in lines if "error" in line.lower()), lines[0] if lines else "")
        raise ExplorerError(f"--sass: {what} failed (exit {proc.returncode}): {first.strip()[:400]}")
    return proc


def supported_archs(tools: Tools) -> list[str]:
    """The ``sm_XX`` this nvcc can generate code for."""
    proc = _run([str(tools.nvcc), "--list-gpu-code"], "nvcc --list-gpu-code", 60)
    return [a for a in proc.stdout.split() if a.startswith("sm_")]


def check_arch(arch: str, tools: Tools) -> str:
    """``arch`` if the tools can build for it, else an ExplorerError listing the ones they can."""
    if not _ARCH.match(arch):
        raise ExplorerError(f"--sass {arch!r}: expected a GPU architecture such as sm_90 (H100/H200) or sm_80 (A100)")
    known = supported_archs(tools)
    base = arch.rstrip("abcdefghijklmnopqrstuvwxyz")
    if known and base not in known:
        raise ExplorerError(f"--sass {arch}: this nvcc builds for {', '.join(known)}")
    return arch


def disassemble(cuda_source: str, arch: str = DEFAULT_ARCH, *, timeout: float = 1800) -> Disassembly:
    """Compile ``cuda_source`` for ``arch`` with line information and disassemble it."""
    tools = find_tools()
    check_arch(arch, tools)
    version = _run([str(tools.nvcc), "--version"], "nvcc --version", 60).stdout
    release = re.search(r"release ([\d.]+)", version)
    with tempfile.TemporaryDirectory(prefix="tvm-explorer-sass-") as tmp:
        src = Path(tmp) / "device.cu"
        src.write_text(cuda_source, encoding="utf-8")
        cubin = Path(tmp) / "device.cubin"
        built = _run(
            [
                str(tools.nvcc),
                "-cubin",
                f"-arch={arch}",
                "-lineinfo",
                "--resource-usage",
                "-w",
                "-o",
                str(cubin),
                str(src),
            ],
            f"nvcc -cubin -arch={arch}",
            timeout,
        )
        listing = _run([str(tools.nvdisasm), "-gi", "-c", str(cubin)], "nvdisasm -gi", timeout)
    return Disassembly(arch, listing.stdout, built.stdout + built.stderr, release.group(1) if release else "?")


def check_sass_request(arch: str, target: str) -> None:
    """``--sass ARCH`` can be done: the target is CUDA, the tools are here and know ``arch``."""
    if target.split()[0] != "cuda":
        raise ExplorerError(f"--sass needs --target cuda (machine code is compiled from the CUDA; got {target!r})")
    check_arch(arch, find_tools())

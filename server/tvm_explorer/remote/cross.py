"""Building for the device: which C compiler links the library (``--cc``, else
``<triple>-gcc`` on PATH for a foreign ``-mtriple``), which architecture a target or a
library is for, and the check that it is the device's. Free of TVM."""

from __future__ import annotations

import os
import platform
import shutil
import subprocess
from typing import Literal

from tvm_explorer.errors import RemoteError

# ELF e_machine values of the architectures a board or phone has.
ELF_MACHINES = {3: "x86", 40: "arm", 62: "x86_64", 183: "aarch64", 243: "riscv"}
_ALIASES = {"arm64": "aarch64", "amd64": "x86_64", "x64": "x86_64", "i386": "x86", "i686": "x86", "riscv64": "riscv"}


def target_options(target: str) -> tuple[str, dict[str, str]]:
    """``"llvm -mtriple=aarch64-linux-gnu -mcpu=cortex-a76"`` → ``("llvm", {"mtriple": ..., "mcpu": ...})``."""
    kind, *rest = target.split()
    options = {}
    for word in rest:
        key, sep, value = word.lstrip("-").partition("=")
        if not word.startswith("-") or not sep or not key or not value:
            raise RemoteError(
                f"--target {target!r}: {word!r} is not an option -key=value (e.g. -mtriple=aarch64-linux-gnu)"
            )
        options[key] = value
    return kind, options


def arch_of(triple: str | None) -> str | None:
    """The architecture of a target triple (``aarch64-linux-gnu`` → ``aarch64``), normalised."""
    if not triple:
        return None
    first = triple.split("-")[0].lower()
    if first.startswith("armv") or first.startswith("thumb"):
        return "arm"
    return _ALIASES.get(first, first)


def host_arch() -> str:
    return arch_of(platform.machine()) or platform.machine()


def elf_arch(path: str) -> str | None:
    """The architecture an ELF file (a shared library) is built for, from its ``e_machine``."""
    with open(path, "rb") as fh:
        head = fh.read(20)
    if len(head) < 20 or head[:4] != b"\x7fELF":
        return None
    order: Literal["little", "big"] = "little" if head[5] == 1 else "big"
    return ELF_MACHINES.get(int.from_bytes(head[18:20], order), f"e_machine {int.from_bytes(head[18:20], order)}")


def _debian_package(triple: str) -> str:
    return f"gcc-{triple}"


def resolve(target: str, cc: str | None) -> tuple[str | None, str | None]:
    """``(compiler, triple)``: the C compiler that links the library for the device (None:
    the system's default, for a build for this machine's architecture) and the target triple
    the library is for (None: this machine's). Raises RemoteError before anything is built."""
    kind, options = target_options(target)
    if kind not in ("llvm", "c"):
        raise RemoteError(
            f"--target {target}: measuring on a device (--rpc, --rpc-tracker) builds for a CPU: use llvm (with -mtriple=…) or c (only --tune runs cuda on a tracker's GPU)"
        )
    triple = options.get("mtriple")
    if cc is not None:
        found = shutil.which(cc) or (cc if os.path.isfile(cc) and os.access(cc, os.X_OK) else None)
        if found is None:
            raise RemoteError(f"--cc {cc}: no such compiler (give its path, or a name on PATH)")
        if triple is None:
            triple = _dumpmachine(found)
        return found, triple
    if triple is None or arch_of(triple) == host_arch():
        return None, triple
    name = f"{triple}-gcc"
    found = shutil.which(name)
    if found is None:
        raise RemoteError(
            f"no C cross compiler for {triple}: {name} is not on PATH; install it (Debian: "
            f"apt-get install {_debian_package(triple)}) or name one with --cc PATH"
        )
    return found, triple


def _dumpmachine(cc: str) -> str | None:
    """The triple a C compiler builds for (``gcc -dumpmachine``), or None if it will not say."""
    try:
        out = subprocess.run([cc, "-dumpmachine"], capture_output=True, text=True, timeout=30, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return out.stdout.strip() or None

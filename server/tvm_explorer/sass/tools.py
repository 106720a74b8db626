"""Where NVIDIA's compiler tools are: the pinned wheels of the ``sass`` extra
(``nvidia-cuda-nvcc``, ``nvidia-cuda-nvdisasm``, ``nvidia-cuda-cuobjdump``, ``nvidia-nvvm``, …,
installed under ``nvidia/cu13/`` of site-packages), else ``$CUDA_HOME/bin``, else ``PATH``."""

from __future__ import annotations

import os
import shutil
import sys
from dataclasses import dataclass
from pathlib import Path

from tvm_explorer.errors import ExplorerError

INSTALL_HINT = (
    "install NVIDIA's compiler wheels with `pip install 'tvm-explorer[sass]'` "
    "(nvcc, nvdisasm, cuobjdump; no GPU needed), or set CUDA_HOME to a CUDA toolkit"
)


@dataclass(frozen=True)
class Tools:
    """The three programs ``--sass`` runs."""

    nvcc: Path
    nvdisasm: Path
    cuobjdump: Path


def _wheel_bins() -> list[Path]:
    found = []
    for entry in sys.path:
        for cu in ("cu13", "cu12"):
            candidate = Path(entry or ".") / "nvidia" / cu / "bin"
            if (candidate / "nvcc").is_file():
                found.append(candidate)
    return found


def find_tools() -> Tools:
    """The tools, or an ExplorerError saying how to install them."""
    dirs = _wheel_bins()
    if os.environ.get("CUDA_HOME"):
        dirs.append(Path(os.environ["CUDA_HOME"]) / "bin")
    for d in dirs:
        paths = [d / name for name in ("nvcc", "nvdisasm", "cuobjdump")]
        if all(p.is_file() and os.access(p, os.X_OK) for p in paths):
            return Tools(*paths)
    on_path = [shutil.which(name) for name in ("nvcc", "nvdisasm", "cuobjdump")]
    if all(on_path):
        return Tools(*(Path(p) for p in on_path if p))
    missing = ", ".join(n for n, p in zip(("nvcc", "nvdisasm", "cuobjdump"), on_path) if not p)
    raise ExplorerError(f"--sass needs NVIDIA's {missing}, which were not found: {INSTALL_HINT}")

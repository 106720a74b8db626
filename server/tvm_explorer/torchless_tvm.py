"""TVM without PyTorch, unless PyTorch is already loaded.

``tvm_ffi`` imports ``torch`` eagerly whenever it is installed (a workaround for a Windows
symbol clash), and so does ``tvm.relax.base_py_module``; that costs 2–3 s of every process
that imports TVM — a compile of a TFLite or ONNX model, a reproducer, a numerics run —
though only PyTorch models need it. This hook hides ``torch`` while ``tvm`` (or ``tvm_ffi``)
first initialises, when nothing has imported ``torch`` before: both treat it as not
installed. PyTorch models are unaffected: their frontend imports ``torch`` itself, and TVM's
PyTorch importer hands weights over through NumPy and DLPack, not ``tvm_ffi``'s torch paths
(``tests/frontends`` compile, run and compare them through the CLI with this hook on).
"""

from __future__ import annotations

import importlib.machinery
import sys

_HIDDEN_FROM = ("tvm", "tvm_ffi")


class _HideTorchFromTvm:  # a meta path finder (not importlib.abc's: that costs 80 ms of start-up)
    def find_spec(self, name, path=None, target=None):
        if name not in _HIDDEN_FROM:
            return None
        spec = importlib.machinery.PathFinder.find_spec(name, path)
        if spec is None or spec.loader is None or "torch" in sys.modules:
            return spec
        loader = spec.loader
        run = loader.exec_module

        def exec_module(module):
            if "torch" in sys.modules:
                return run(module)
            sys.modules["torch"] = None  # type: ignore[assignment]  # ImportError inside tvm_ffi
            try:
                return run(module)
            finally:
                if "torch" in sys.modules and sys.modules["torch"] is None:
                    del sys.modules["torch"]

        loader.exec_module = exec_module  # type: ignore[method-assign]
        return spec


def install() -> None:
    """Hide ``torch`` from TVM's first import in this process (once)."""
    if any(m in sys.modules for m in _HIDDEN_FROM):
        return
    if not any(isinstance(f, _HideTorchFromTvm) for f in sys.meta_path):
        sys.meta_path.insert(0, _HideTorchFromTvm())

"""TVM Explorer: provenance from TFLite layers to generated code, served over LSP.

``Capture`` and ``compile_model`` import TVM on first use, so that the language server,
which never needs TVM, starts fast.
"""

from tvm_explorer import torchless_tvm
from tvm_explorer.version import __version__

torchless_tvm.install()

__all__ = ["Capture", "compile_model", "__version__"]


def __getattr__(name):
    if name in ("compile_model", "Capture"):
        from tvm_explorer.app import compile as api

        return getattr(api, name)
    raise AttributeError(name)

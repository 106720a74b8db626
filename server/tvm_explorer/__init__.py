"""TVM Explorer: provenance from TFLite layers to generated code, served over LSP.

``Capture`` and ``compile_model`` import TVM on first use, so that the language server,
which never needs TVM, starts fast.
"""

__version__ = "0.1.0"

__all__ = ["Capture", "compile_model", "__version__"]


def __getattr__(name):
    if name in ("compile_model", "Capture"):
        from .capture import api

        return getattr(api, name)
    raise AttributeError(name)

"""TVM Explorer: provenance from TFLite layers to generated code, served over LSP."""

__version__ = "0.1.0"

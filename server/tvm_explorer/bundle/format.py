"""Constants of the bundle format (see docs/bundle-format.md)."""

FORMAT_NAME = "tvm-explorer-bundle"
SCHEMA_VERSION = 2
MANIFEST = "manifest.json"
INDEX = "index.json"
MODEL_DOCUMENT = "model.tflgraph"

STAGES = ("model", "relax", "tir", "code")

KINDS = ("layer", "tensor", "function", "binding", "primfunc", "loop", "block", "stmt")

LANGUAGE_BY_SUFFIX = {
    ".tflgraph": "tflgraph",
    ".onnxgraph": "onnxgraph",
    ".fxgraph": "fxgraph",
    ".nngraph": "nngraph",
    ".relax": "tvm-relax",
    ".tir": "tvm-tir",
    ".c": "c",
    ".cu": "cuda-cpp",
    ".ll": "llvm",
    ".sass": "tvm-sass",
    ".py": "python",
}

"""ONNX models: reading them (``loader``, ``external_data``), importing them with spans
(``importer``) and the onnxruntime reference (``onnx_runtime``)."""

from __future__ import annotations

from tvm_explorer.frontends.base import Frontend, ReferenceEngine, lazy
from tvm_explorer.frontends.graph import declared_inputs, render_graph_document, same_graph_by_loading
from tvm_explorer.frontends.onnx.subgraph import WRITER

_LOADER = "tvm_explorer.frontends.onnx.loader"
_RUNTIME = "tvm_explorer.frontends.onnx.onnx_runtime"

FRONTEND = Frontend(
    kind="onnx",
    suffix=".onnx",
    unit="node",
    load=lazy(_LOADER, "load_onnx"),
    preview=lazy(_LOADER, "load_onnx"),
    import_model=lazy("tvm_explorer.frontends.onnx.importer", "import_onnx"),
    render_document=render_graph_document,
    input_dims=declared_inputs,
    pin_inputs=lazy(_LOADER, "pin_inputs"),
    from_memory=lazy(_LOADER, "describe_proto"),
    reference=ReferenceEngine(
        describe=lazy(_RUNTIME, "describe"),
        run=lazy(_RUNTIME, "run_onnx"),
        quantization_of=lazy(_RUNTIME, "quantization_of"),
        check_same_graph=same_graph_by_loading,
    ),
    subgraph_writer=WRITER,
    explorer_adapter="the ONNX adapter of the model-explorer-onnx extension",
    explorer_extension="model-explorer-onnx==0.4.2",
    explorer_extension_module="model_explorer_onnx",
)

"""TFLite models: reading the flatbuffer (``loader``), naming layers (``names``), the model
document (``document``), importing with stamps (``importer``) and the LiteRT reference
(``litert``)."""

from __future__ import annotations

from tvm_explorer.frontends.base import Frontend, ReferenceEngine, lazy
from tvm_explorer.frontends.tflite.subgraph import WRITER

_LOADER = "tvm_explorer.frontends.tflite.loader"
_LITERT = "tvm_explorer.frontends.tflite.litert"

FRONTEND = Frontend(
    kind="tflite",
    suffix=".tflite",
    unit="op",
    load=lazy(_LOADER, "load_model"),
    preview=lazy(_LOADER, "preview_model"),
    import_model=lazy("tvm_explorer.frontends.tflite.importer", "import_tflite"),
    render_document=lazy("tvm_explorer.frontends.tflite.document", "render_document"),
    shown_options=lazy("tvm_explorer.frontends.tflite.document", "shown_options"),
    input_dims=lazy(_LOADER, "declared_inputs"),
    pin_inputs=lazy(_LOADER, "pin_inputs"),
    reference=ReferenceEngine(
        describe=lazy(_LITERT, "describe"),
        run=lazy(_LITERT, "run_reference"),
        quantization_of=lazy(_LITERT, "quantization_of"),
        check_same_graph=lazy(_LITERT, "check_same_graph"),
        arena=lazy("tvm_explorer.frontends.tflite.arena", "arena_of"),
    ),
    subgraph_writer=WRITER,
    explorer_adapter="Model Explorer's built-in TFLite adapter (flatbuffer)",
)

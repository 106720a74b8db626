"""PyTorch models (``torch.export`` ExportedPrograms, saved as ``.pt2``): reading them
(``loader``, without running pickles: ``safe_load``; without PyTorch: ``archive``), importing
them with spans (``importer``) and the eager reference (``eager``). PyTorch is an optional
extra."""

from __future__ import annotations

from tvm_explorer.frontends.base import Frontend, ReferenceEngine, lazy, no_quantization
from tvm_explorer.frontends.graph import declared_inputs, render_graph_document, same_graph_by_loading

_EAGER = "tvm_explorer.frontends.torch.eager"

FRONTEND = Frontend(
    kind="torch",
    suffix=".pt2",
    unit="node",
    load=lazy("tvm_explorer.frontends.torch.loader", "load_pt2"),
    preview=lazy("tvm_explorer.frontends.torch.archive", "read_pt2_archive"),
    import_model=lazy("tvm_explorer.frontends.torch.importer", "import_torch"),
    render_document=render_graph_document,
    input_dims=declared_inputs,
    pin_inputs=lazy("tvm_explorer.frontends.torch.pinning", "pin_inputs"),
    from_memory=lazy("tvm_explorer.frontends.torch.loader", "describe_in_memory"),
    reference=ReferenceEngine(
        describe=lazy(_EAGER, "describe"),
        run=lazy(_EAGER, "run_eager"),
        quantization_of=no_quantization,  # a float program: no quantized tensors we can name
        check_same_graph=same_graph_by_loading,
    ),
    explorer_adapter="Model Explorer's built-in PyTorch ExportedProgram adapter (PyTorch installed beside it)",
)

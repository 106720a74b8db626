"""PyTorch models (``torch.export`` ExportedPrograms, saved as ``.pt2``): reading them
(``loader``, without running pickles: ``safe_load``; without PyTorch: ``archive``), importing
them with spans (``importer``) and the eager reference (``eager``). PyTorch is an optional
extra."""

from __future__ import annotations

from tvm_explorer.frontends.base import Frontend, ReferenceEngine


def _load(path):
    from tvm_explorer.frontends.torch.loader import load_pt2

    return load_pt2(path)


def _preview(path):
    from tvm_explorer.frontends.torch.archive import read_pt2_archive

    return read_pt2_archive(path)


def _import(model, origins, *, fill_spans: bool = True):
    from tvm_explorer.frontends.torch.importer import import_torch

    return import_torch(model, origins, fill_spans=fill_spans)


def _input_dims(model):
    return model.declared_inputs


def _pin(model, shapes):
    from tvm_explorer.frontends.torch.pinning import pin_inputs

    return pin_inputs(model, shapes)


def _render(model, origins):
    from tvm_explorer.frontends.graph_document import render_graph_document

    return (model.document_path, *render_graph_document(model, origins))


def _describe(path) -> str:
    import os

    from tvm_explorer.frontends.torch.eager import engine

    return f"{engine()} on {os.path.basename(os.fspath(path))}"


def _run(path, inputs):
    from tvm_explorer.frontends.torch.eager import run_eager

    return run_eager(path, inputs)


def _no_quantization(path) -> dict:
    return {}  # a float program: no quantized tensors we can name


def _check_same_graph(model, reference_path):
    from tvm_explorer.frontends.reference_run import check_same_graph_by_loading

    return check_same_graph_by_loading(model, reference_path)


FRONTEND = Frontend(
    kind="torch",
    suffix=".pt2",
    unit="node",
    load=_load,
    preview=_preview,
    import_model=_import,
    render_document=_render,
    input_dims=_input_dims,
    pin_inputs=_pin,
    reference=ReferenceEngine(
        describe=_describe, run=_run, quantization_of=_no_quantization, check_same_graph=_check_same_graph
    ),
    explorer_adapter="Model Explorer's built-in PyTorch ExportedProgram adapter (PyTorch installed beside it)",
)

"""ONNX models: reading them (``loader``, ``external_data``), importing them with spans
(``importer``) and the onnxruntime reference (``onnx_runtime``)."""

from __future__ import annotations

from tvm_explorer.frontends.base import Frontend, ReferenceEngine


def _load(path):
    from tvm_explorer.frontends.onnx.loader import load_onnx

    return load_onnx(path)


def _import(model, origins, *, fill_spans: bool = True):
    from tvm_explorer.frontends.onnx.importer import import_onnx

    return import_onnx(model, origins, fill_spans=fill_spans)


def _input_dims(model):
    return model.declared_inputs


def _pin(model, shapes):
    from tvm_explorer.frontends.onnx.loader import pin_inputs

    return pin_inputs(model, shapes)


def _render(model, origins):
    from tvm_explorer.frontends.graph_document import render_graph_document

    return (model.document_path, *render_graph_document(model, origins))


def _describe(path) -> str:
    import os

    from tvm_explorer.frontends.onnx.onnx_runtime import engine

    return f"{engine()} on {os.path.basename(os.fspath(path))}"


def _run(path, inputs):
    from tvm_explorer.frontends.onnx.onnx_runtime import run_onnx

    return run_onnx(path, inputs)


def _quantization(path):
    from tvm_explorer.frontends.onnx.onnx_runtime import quantization_of

    return quantization_of(path)


def _check_same_graph(model, reference_path):
    from tvm_explorer.frontends.reference_run import check_same_graph_by_loading

    return check_same_graph_by_loading(model, reference_path)


def _subgraph_writer():
    from tvm_explorer.frontends.onnx.subgraph import WRITER

    return WRITER


FRONTEND = Frontend(
    kind="onnx",
    suffix=".onnx",
    unit="node",
    load=_load,
    preview=_load,
    import_model=_import,
    render_document=_render,
    input_dims=_input_dims,
    pin_inputs=_pin,
    reference=ReferenceEngine(
        describe=_describe, run=_run, quantization_of=_quantization, check_same_graph=_check_same_graph
    ),
    subgraph_writer=_subgraph_writer(),
    explorer_adapter="the ONNX adapter of the model-explorer-onnx extension",
    explorer_extension="model-explorer-onnx==0.4.2",
    explorer_extension_module="model_explorer_onnx",
)

"""TFLite models: reading the flatbuffer (``loader``), naming layers (``names``), the model
document (``document``), importing with stamps (``importer``) and the LiteRT reference
(``litert``)."""

from __future__ import annotations

from tvm_explorer.frontends.base import Frontend, ReferenceEngine


def _load(path):
    from tvm_explorer.frontends.tflite.loader import load_model

    return load_model(path)


def _preview(path):
    from tvm_explorer.frontends.preview import MAX_PREVIEW_BYTES
    from tvm_explorer.frontends.tflite.loader import load_model

    return load_model(path, MAX_PREVIEW_BYTES)


def _import(model, origins, *, fill_spans: bool = True):
    from tvm_explorer.frontends.tflite.importer import import_tflite

    return import_tflite(model, origins, fill_spans=fill_spans)


def _input_dims(model):
    from tvm_explorer.frontends.tflite.loader import declared_inputs

    return declared_inputs(model)


def _pin(model, shapes):
    from tvm_explorer.frontends.tflite.loader import pin_inputs

    return pin_inputs(model, shapes)


def _render(model, origins):
    from tvm_explorer.bundle.format import MODEL_DOCUMENT
    from tvm_explorer.frontends.tflite.document import render_model_document

    return (MODEL_DOCUMENT, *render_model_document(model, origins))


def _describe(path) -> str:
    import os

    return f"LiteRT interpreter on {os.path.basename(os.fspath(path))}"


def _run(path, inputs):
    from tvm_explorer.frontends.tflite.litert import run_reference

    return run_reference(path, inputs)


def _quantization(path):
    from tvm_explorer.frontends.tflite.litert import quantization_of

    return quantization_of(path)


def _check_same_graph(model, reference_path):
    from tvm_explorer.frontends.tflite.litert import check_same_graph

    return check_same_graph(model, reference_path)


def _arena(path):
    from tvm_explorer.frontends.tflite.arena import arena_of

    return arena_of(path)


def _subgraph_writer():
    from tvm_explorer.frontends.tflite.subgraph import WRITER

    return WRITER


FRONTEND = Frontend(
    kind="tflite",
    suffix=".tflite",
    unit="op",
    load=_load,
    preview=_preview,
    import_model=_import,
    render_document=_render,
    input_dims=_input_dims,
    pin_inputs=_pin,
    reference=ReferenceEngine(
        describe=_describe,
        run=_run,
        quantization_of=_quantization,
        check_same_graph=_check_same_graph,
        arena=_arena,
    ),
    subgraph_writer=_subgraph_writer(),
    explorer_adapter="Model Explorer's built-in TFLite adapter (flatbuffer)",
)

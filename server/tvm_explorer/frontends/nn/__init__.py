"""``tvm.relax.frontend.nn`` models (TVM's own model API, as MLC-LLM and TVM's tutorials write
them): ``Capture.from_nn(module, spec)`` in Python, ``FILE.py:FACTORY`` on the command line
(``factory``: that is code the user runs). ``export`` records, per op the module emits, its
module path and the user's source line; ``importer`` stamps them on the export. There is no
framework of its own to compare with: ``--numerics`` says so."""

from __future__ import annotations

import os

from tvm_explorer.errors import ExplorerError, ModelError
from tvm_explorer.frontends.base import Frontend, ReferenceEngine

SUFFIX = ".py"


def _load(path):
    from tvm_explorer.frontends.nn.export import describe_nn, sha256_of
    from tvm_explorer.frontends.nn.factory import run_factory, split_factory

    module, spec = run_factory(os.fspath(path))
    parts = split_factory(os.fspath(path))
    assert parts is not None  # run_factory accepted the path
    file, factory = parts
    return describe_nn(module, spec, os.fspath(path), sha256_of(file, factory))


def _preview(path):
    raise ModelError(
        f"{path}: a Python model is code; it is shown only after you compile it "
        "(tvm-explorer compile FILE.py:FACTORY -o BUNDLE)"
    )


def _import(model, origins, *, fill_spans: bool = True):
    from tvm_explorer.frontends.nn.importer import import_nn

    return import_nn(model, origins, fill_spans=fill_spans)


def _render(model, origins):
    from tvm_explorer.frontends.graph_document import render_graph_document

    return (model.document_path, *render_graph_document(model, origins))


def _no_reference(path, _inputs=None):
    raise ExplorerError(
        f"{path}: --numerics compares with the model's own framework; a tvm.relax.frontend.nn "
        "module has none besides TVM (use --profile, or compile the PyTorch original as a .pt2)"
    )


def _no_quantization(path) -> dict:
    return {}


FRONTEND = Frontend(
    kind="nn",
    suffix=SUFFIX,
    unit="node",
    load=_load,
    preview=_preview,
    import_model=_import,
    render_document=_render,
    reference=ReferenceEngine(
        describe=_no_reference, run=_no_reference, quantization_of=_no_quantization, check_same_graph=_no_reference
    ),
)

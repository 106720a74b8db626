"""``tvm.relax.frontend.nn`` models (TVM's own model API, as MLC-LLM and TVM's tutorials write
them): ``Capture.from_nn(module, spec)`` in Python, ``FILE.py:FACTORY`` on the command line
(``factory``: that is code the user runs). ``export`` records, per op the module emits, its
module path and the user's source line; ``importer`` stamps them on the export. There is no
framework of its own to compare with: ``--numerics`` says so."""

from __future__ import annotations

from tvm_explorer.frontends.base import Frontend, ReferenceEngine, lazy, no_quantization
from tvm_explorer.frontends.graph import render_graph_document

SUFFIX = ".py"
_FACTORY = "tvm_explorer.frontends.nn.factory"

FRONTEND = Frontend(
    kind="nn",
    suffix=SUFFIX,
    unit="node",
    load=lazy("tvm_explorer.frontends.nn.export", "load_nn"),
    preview=lazy(_FACTORY, "refuse_preview"),
    import_model=lazy("tvm_explorer.frontends.nn.importer", "import_nn"),
    render_document=render_graph_document,
    from_memory=lazy("tvm_explorer.frontends.nn.export", "describe_in_memory"),
    reference=ReferenceEngine(
        describe=lazy(_FACTORY, "no_reference"),
        run=lazy(_FACTORY, "no_reference"),
        quantization_of=no_quantization,
        check_same_graph=lazy(_FACTORY, "no_reference"),
    ),
)

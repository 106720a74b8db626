"""The model document of a model file on its own, for viewing a model before (or without)
compiling it: the same text a bundle's model document has (``model.tflgraph`` /
``model.onnxgraph``; for a ``.pt2`` the graph as saved, read from its JSON without unpickling
anything, see ``frontends/torch/archive.py``)."""

from __future__ import annotations

import os

from tvm_explorer.provenance import OriginTable

MAX_PREVIEW_BYTES = 256 * 1024**2
"""Largest model shown as a model document (the largest file a bundle may hold,
``bundle.files.MAX_FILE_BYTES``; the server reads it whole, and renders its text)."""


def model_document_text(path: str | os.PathLike) -> str:
    """The model document of the ``.tflite``, ``.onnx`` or ``.pt2`` model at ``path``; raises
    ModelError naming the file (missing, not a model, damaged, not a regular file, larger than
    ``MAX_PREVIEW_BYTES``) otherwise."""
    from tvm_explorer.frontends import frontend_for

    frontend = frontend_for(path)
    model = frontend.preview(path)
    _doc_path, text, _ranges = frontend.render_document(model, OriginTable())
    return text

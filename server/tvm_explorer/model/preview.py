"""The model document of a model file on its own, for viewing a model before (or without)
compiling it: the same text a bundle's model document has (``model.tflgraph`` /
``model.onnxgraph``; for a ``.pt2`` the graph as saved, read from its JSON without unpickling
anything, see ``frontends/torch/archive.py``)."""

from __future__ import annotations

import os

from ..provenance import OriginTable


MAX_PREVIEW_BYTES = 256 * 1024**2
"""Largest model shown as a model document (the largest file a bundle may hold,
``bundle.reader.MAX_FILE_BYTES``; the server reads it whole, and renders its text)."""


def model_document_text(path: str | os.PathLike) -> str:
    """The model document of the ``.tflite``, ``.onnx`` or ``.pt2`` model at ``path``; raises
    ModelError naming the file (missing, not a model, damaged, not a regular file, larger than
    ``MAX_PREVIEW_BYTES``) otherwise."""
    from ..frontends import kind_of, load_any, render_document

    kind = kind_of(path)
    if kind == "torch":
        from ..frontends.torch.archive import read_pt2_archive

        model = read_pt2_archive(path)
    elif kind == "onnx":
        model = load_any(path)
    else:
        from .loader import load_model

        model = load_model(path, MAX_PREVIEW_BYTES)
    _doc_path, text, _ranges = render_document(model, OriginTable())
    return text

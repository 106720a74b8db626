"""The model document of a ``.tflite`` file on its own, for viewing a model before (or
without) compiling it: the same text a bundle's ``model.tflgraph`` has."""

from __future__ import annotations

import os

from ..provenance import OriginTable
from .document import render_model_document
from .loader import load_model


MAX_PREVIEW_BYTES = 256 * 1024**2
"""Largest model shown as a model document (the largest file a bundle may hold,
``bundle.reader.MAX_FILE_BYTES``; the server reads it whole, and renders its text)."""


def model_document_text(path: str | os.PathLike) -> str:
    """The model document of the TFLite model at ``path``; raises ModelError naming the file
    (missing, not a model, damaged) otherwise."""
    text, _ranges = render_model_document(load_model(path, MAX_PREVIEW_BYTES), OriginTable())
    return text

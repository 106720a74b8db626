"""The user's own source lines behind a piece of a bundle (PyTorch ``stack_trace``, the ONNX
dynamo exporter's ``pkg.torch.onnx.stack_trace``), for definition and hover."""

from __future__ import annotations

import os
from dataclasses import dataclass

from ..bundle.reader import Layer
from .provenance import layers_at
from .view import BundleView, Keep, keep_all


@dataclass(frozen=True)
class SourceLine:
    """A line of a file on disk: 0-based line, and the columns of its text (indent stripped)."""

    file: str
    line: int
    start: int
    end: int


def _read_line(file: str, line: int) -> str | None:
    try:
        with open(file, encoding="utf-8", errors="replace") as fh:
            for i, text in enumerate(fh, 1):
                if i == line:
                    return text.rstrip("\r\n")
    except OSError:
        return None
    return None


def source_lines(view: BundleView, path: str, offset: int, keep: Keep = keep_all) -> list[SourceLine]:
    """The existing source lines of the layers the text at ``offset`` came from (in origin
    order, each once). Lines of files that are not on disk are left out."""
    out: list[SourceLine] = []
    seen = set()
    for origin in layers_at(view, path, offset, keep):
        src = origin.layer.source
        if src is None or src in seen or not os.path.isfile(src[0]):
            continue
        seen.add(src)
        text = _read_line(src[0], src[1])
        if text is None:
            continue
        start = len(text) - len(text.lstrip())
        out.append(SourceLine(src[0], src[1] - 1, start, len(text)))
    return out


def layer_caption(layer: Layer) -> str:
    """``backbone.conv (Conv2d) — net.py:23``: a layer's name, module class and source line
    (empty when the bundle knows none of them)."""
    name = layer.name.split("/")[0] if "/" in layer.name and layer.module_class else layer.name
    text = name
    if layer.module_class:
        text += f" ({layer.module_class})"
    if layer.source is not None:
        text += f" — {os.path.basename(layer.source[0])}:{layer.source[1]}"
    return text.strip()

"""The user's own source lines behind a piece of a bundle (PyTorch ``stack_trace``, the ONNX
dynamo exporter's ``pkg.torch.onnx.stack_trace``), for definition and hover."""

from __future__ import annotations

import os
from dataclasses import dataclass

from tvm_explorer.bundle.types import Layer, Origin
from tvm_explorer.navigation.provenance import layers_at
from tvm_explorer.navigation.view import BundleView, Keep, keep_all
from tvm_explorer.provenance.repeats import group_repeated


@dataclass(frozen=True)
class SourceLine:
    """A line of a file on disk: 0-based line, and the columns of its text (indent stripped)."""

    file: str
    line: int
    start: int
    end: int


MAX_SOURCE_SCAN_BYTES = 64 * 1024**2
"""Most bytes of a source file read to find a line (a real one is far smaller; a 2 GiB file
without a newline was read whole: 2.1 GB of memory, the server stalled 13 s)."""

MAX_SOURCE_LINE_BYTES = 64 * 1024
"""Most bytes of the found line kept (a longer one is cut: its location ends there)."""


def read_line(file: str, line: int) -> str | None:
    """The 1-based ``line`` of ``file`` (without its line break), or None when the file is
    not a regular file, cannot be read or has no such line within ``MAX_SOURCE_SCAN_BYTES``.
    Reads in chunks, keeping at most ``MAX_SOURCE_LINE_BYTES`` of the line; never blocks on
    a FIFO."""
    import stat

    if line < 1:
        return None
    try:
        fd = os.open(file, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except (OSError, ValueError):
        return None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        number, kept, scanned = 1, bytearray(), 0
        while scanned < MAX_SOURCE_SCAN_BYTES:
            chunk = os.read(fd, min(1 << 20, MAX_SOURCE_SCAN_BYTES - scanned))
            if not chunk:
                break
            scanned += len(chunk)
            start = 0
            if number < line and number + chunk.count(b"\n") < line:
                number += chunk.count(b"\n")  # the line is further on
                continue
            while number < line:
                nl = chunk.find(b"\n", start)
                if nl < 0:
                    break
                number, start = number + 1, nl + 1
            if number < line:
                continue
            end = chunk.find(b"\n", start)
            kept += chunk[start : end if end >= 0 else len(chunk)][: MAX_SOURCE_LINE_BYTES - len(kept)]
            if end >= 0 or len(kept) >= MAX_SOURCE_LINE_BYTES:
                break
        if number < line:
            return None
    except OSError:
        return None
    finally:
        os.close(fd)
    return kept.decode("utf-8", "replace").rstrip("\r")


def source_refs(view: BundleView, path: str, offset: int, keep: Keep = keep_all) -> list[tuple[str, int]]:
    """The (file, 1-based line) source entries of the layers the text at ``offset`` came
    from (in origin order, each once); nothing is read."""
    out: list[tuple[str, int]] = []
    for origin in layers_at(view, path, offset, keep):
        src = origin.layer.source
        if src is not None and src not in out:
            out.append(src)
    return out


def read_source_lines(refs: list[tuple[str, int]]) -> list[SourceLine]:
    """The existing lines of ``refs`` (see ``source_refs``); lines of files that are not on
    disk are left out. Reads files: call it off the event loop."""
    out: list[SourceLine] = []
    for file, number in refs:
        text = read_line(file, number)
        if text is None:
            continue
        start = len(text) - len(text.lstrip())
        out.append(SourceLine(file, number - 1, start, len(text)))
    return out


def layer_caption(layer: Layer, full_path: bool = False) -> str:
    """``backbone.conv (Conv2d) — net.py:23``: a layer's name, module class and source line
    (empty when the bundle knows none of them); ``full_path``: the source file as recorded."""
    name = layer.name.split("/")[0] if "/" in layer.name and layer.module_class else layer.name
    text = name
    if layer.module_class:
        text += f" ({layer.module_class})"
    if layer.source is not None:
        file = layer.source[0] if full_path else os.path.basename(layer.source[0])
        text += f" — {file}:{layer.source[1]}"
    return text.strip()


def call_chain(layer: Layer) -> tuple[tuple[str, int, str], ...]:
    """The frames of a layer's stack from the entry point down to its source line (the
    innermost model-code frame); empty without a stack or a source line."""
    if layer.source is None or not layer.stack:
        return ()
    for i in range(len(layer.stack) - 1, -1, -1):
        if layer.stack[i][:2] == layer.source:
            return layer.stack[: i + 1]
    return ()


def chain_text(layer: Layer) -> str:
    """``wrapper.py:9 → modeling_llama.py:394 → :299 → :244``: the call chain to a layer's
    source line, a file named once for consecutive frames in it; empty for a chain of one."""
    chain = call_chain(layer)
    if len(chain) < 2:
        return ""
    parts, last = [], None
    for file, line, _function in chain:
        parts.append(f":{line}" if file == last else f"{os.path.basename(file)}:{line}")
        last = file
    return " → ".join(parts)


def stack_refs(view: BundleView, path: str, offset: int, keep: Keep = keep_all) -> list[tuple[str, int]]:
    """For go to definition: the source lines of the layers at ``offset`` first (innermost
    model-code frames, ``source_refs``), then the other frames of their call chains, innermost
    outward, each once; nothing is read."""
    out = source_refs(view, path, offset, keep)
    for origin in layers_at(view, path, offset, keep):
        for file, line, _function in reversed(call_chain(origin.layer)):
            if (file, line) not in out:
                out.append((file, line))
    return out


def repeat_path(layer: Layer) -> str:
    """What repeats across decoder layers in a layer's name: its module path (PyTorch), the
    whole name otherwise."""
    return layer.name.split("/")[0] if "/" in layer.name and layer.module_class else layer.name


def group_caption(layer: Layer, path: str, full_path: bool = False) -> str:
    """``layer_caption`` of a group of layers repeated across decoder layers, named by their
    compressed path (``model.layers.{0..1}.self_attn.q_proj (Linear) — modeling_llama.py:243``)."""
    own = layer_caption(layer, full_path)
    name = repeat_path(layer)
    return path + own[len(name) :] if name and own.startswith(name) else own


def repeated_groups(origins: list[Origin]) -> list[list[tuple[Origin, str]]]:
    """Origins that are the same layer of repeated blocks (same op, class, source line, call
    chain and role; module paths differing only in a layer index), each group with its
    compressed path (``model.layers.{0..1}.self_attn.q_proj``), in origin order."""
    buckets: dict[tuple, list[Origin]] = {}
    for o in origins:
        lay = o.layer
        key = (lay.opcode, lay.module_class, lay.source, lay.stack, o.is_output)
        buckets.setdefault(key, []).append(o)
    out: list[list[tuple[Origin, str]]] = []
    for members in buckets.values():
        for path, at in group_repeated([repeat_path(m.layer) for m in members]):
            out.append([(members[i], path) for i in at])
    out.sort(key=lambda g: origins.index(g[0][0]))
    return out


def layer_labels(layers: list[Layer]) -> list[str]:
    """``aten.mm.default ops 61, 164 m.model.layers.{0..1}.self_attn.q_proj``: the layers, the
    same layer of repeated blocks named once (Layer Places' title), in the order given."""
    buckets: dict[tuple, list[Layer]] = {}
    for lay in layers:
        buckets.setdefault((lay.opcode, lay.module_class, lay.source), []).append(lay)
    groups: list[list[Layer]] = []
    labels: dict[int, str] = {}
    for members in buckets.values():
        for path, at in group_repeated([repeat_path(m) for m in members]):
            group = [members[i] for i in at]
            groups.append(group)
            if len(group) > 1:
                ops = ", ".join(str(m.op_index) for m in group)
                labels[id(group)] = f"{group[0].opcode} ops {ops} {path}"
            else:
                lay = group[0]
                name = lay.display_name
                labels[id(group)] = f"{lay.opcode} op {lay.op_index}{f' {name}' if name else ''}"
    groups.sort(key=lambda g: layers.index(g[0]))
    return [labels[id(g)] for g in groups]

"""What "Extract Reproducer" at a position of a bundle document extracts: the layer under the
cursor in the model document, else the PrimFunc / kernel / Relax function around it."""

from __future__ import annotations

from dataclasses import dataclass

from tvm_explorer.bundle.reader import Bundle
from tvm_explorer.reproducers.extract import describe_layer
from tvm_explorer.reproducers.signature import read_signature


@dataclass(frozen=True)
class ExtractRequest:
    """Arguments of one extraction, and the title an editor shows for it."""

    title: str
    name: str | None = None
    layer: int | None = None
    subgraph: int = 0
    pass_index: int | None = None

    def to_json(self) -> dict:
        return {"name": self.name, "layer": self.layer, "subgraph": self.subgraph, "pass": self.pass_index}


def _packed(bundle: Bundle, path: str, rng) -> bool:
    try:
        _, args = read_signature(bundle.text(path)[rng.start : rng.end])
    except ValueError:
        return True
    return not all(a.is_buffer for a in args)


def request_at(bundle: Bundle, path: str, offset: int) -> ExtractRequest | None:
    """The extraction meant at ``offset`` of document ``path``, or None."""
    doc = bundle.document(path)
    if doc is None:
        return None
    for rng in bundle.index(path).enclosing(offset):
        if rng.kind == "layer":
            _, sg, op = rng.key.split(":")
            layer = bundle.layer(int(sg), int(op))
            if layer is None:
                return None
            return ExtractRequest(
                f"Extract Reproducer: kernels of {describe_layer(layer)}", layer=layer.op_index, subgraph=layer.subgraph
            )
        if rng.kind == "binding" and rng.link and rng.link.startswith("prim:"):
            name = rng.link[5:]
            return ExtractRequest(f"Extract Reproducer: {name}", name=name)
        if rng.kind == "primfunc":
            name = rng.key[5:]
            if doc.stage == "tir" and doc.pass_index is not None and not _packed(bundle, path, rng):
                return ExtractRequest(
                    f"Extract Reproducer: {name} (as after pass {doc.pass_index})", name=name, pass_index=doc.pass_index
                )
            return ExtractRequest(f"Extract Reproducer: {name}", name=name)
        if rng.kind == "function":
            name = rng.key[5:]
            return ExtractRequest(f"Extract Reproducer: kernels called by {name}", name=name)
    return None

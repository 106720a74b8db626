"""Which function of a document computes a layer's output (the layer's kernel), and which hold
only a part of it. Quantized models lower a layer's input dequantize into the kernel of the
layer before it (``fused_max_pool2d_dequantize3`` computes MAX_POOL_2D op 1 and the dequantize
of CONV_2D op 2's input), or into a small kernel of its own (``dequantize10``): such a function
holds the layer's statements but is not where the layer is computed. Read from the
``is_output`` flags of the origin sets of the functions' ranges (docs/bundle-format.md), and, in
a Relax document, of the bindings calling them.

Also the argument-checking wrappers of LLVM's generated code: ``@__tvm_ffi_<name>`` carries the
same key as the ``<name>_compute_`` function holding the statements, and no statement itself.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from dataclasses import dataclass, field

from tvm_explorer.bundle.index import Range
from tvm_explorer.navigation.view import BundleView, Place

FUNCTION_KINDS = ("primfunc", "function")


@dataclass(frozen=True)
class KernelPart:
    """A function holding statements of some layers but computing none of their outputs."""

    function: str
    layers: tuple[int, ...]
    """The asked layers it holds statements of."""
    hosts: tuple[int, ...]
    """The layers whose output it computes (its own kernel's layers); () for a kernel that
    computes nothing but this part."""
    what: str
    """What it computes of them: "input dequantize", "input padding", or the buffers it writes."""


def function_name(key: str) -> str:
    """``prim:fused_conv2d`` -> ``fused_conv2d`` (a key without a prefix is the name)."""
    return key.partition(":")[2] or key


def function_of(view: BundleView, place: Place) -> str:
    """Name of the innermost function, PrimFunc or kernel holding ``place`` ("" if none)."""
    if place.kind in FUNCTION_KINDS:
        return function_name(place.key)
    for rng in view.bundle.index(place.path).enclosing(place.start):
        if rng.kind in FUNCTION_KINDS and rng.end >= place.end:
            return function_name(rng.key)
    return ""


def unit_of(rng: Range | Place) -> str | None:
    """The function a range stands for as a unit of computation: a function's own name, the
    PrimFunc a Relax binding calls; None for anything else."""
    if rng.kind in FUNCTION_KINDS:
        return function_name(rng.key)
    link = getattr(rng, "link", None)
    if rng.kind == "binding" and link and link.startswith("prim:"):
        return function_name(link)
    return None


def place_unit(view: BundleView, place: Place) -> str:
    """The function a place belongs to as a unit of computation: the PrimFunc a Relax binding
    calls, else the function holding it ("" if none)."""
    if place.kind == "binding":
        for rng in view.bundle.index(place.path).by_key(place.key):
            if rng.start == place.start:
                return unit_of(rng) or ""
        return ""
    return function_of(view, place)


@dataclass
class _Unit:
    own: bool = False  # computes the output of one of the asked layers
    hosts: set[int] = field(default_factory=set)  # every layer whose output it computes
    held: set[int] = field(default_factory=set)  # the asked layers it holds


def _units(view: BundleView, path: str, layer_ids) -> dict[str, _Unit]:
    """Per function of ``path`` holding one of the layers (through its own range, or a binding
    calling it): whether it computes one of their outputs, every layer whose output it
    computes, and which of the layers it holds."""
    asked = set(layer_ids)
    out: dict[str, _Unit] = {}
    for lid in asked:
        for rng in view.layer_map.ranges(lid, path):
            unit = unit_of(rng)
            if unit is None or (rng.kind == "function" and unit == "main"):
                continue
            got = out.setdefault(unit, _Unit())
            got.held.add(lid)
            for origin in view.bundle.origins(rng.origin_set):
                if origin.is_output:
                    got.hosts.add(origin.layer.id)
                    got.own = got.own or origin.layer.id in asked
    return out


def output_functions(view: BundleView, path: str, layer_ids) -> set[str]:
    """The functions of ``path`` computing the output of one of the layers (their kernels)."""
    return {name for name, unit in _units(view, path, layer_ids).items() if unit.own}


def kernel_parts(view: BundleView, path: str, layer_ids) -> dict[str, KernelPart]:
    """The functions of ``path`` holding statements of the layers without computing any of their
    outputs, by name: a prologue inside another layer's kernel, or a kernel of its own."""
    asked = set(layer_ids)
    return {
        name: KernelPart(
            name, tuple(sorted(unit.held)), tuple(sorted(unit.hosts - asked)), _what(view, name, unit.held)
        )
        for name, unit in _units(view, path, asked).items()
        if not unit.own
    }


_STORE = re.compile(r"\s*([A-Za-z_]\w*)\s*\[")
_PARTS = (("dequantize", "input dequantize"), ("pad", "input padding"))


def _what(view: BundleView, function: str, layer_ids) -> str:
    """What the function computes of the layers, read from the buffers their statements store
    to in the final TIR: "input dequantize", "input padding", else those buffers' names."""
    tir = [doc.path for doc in view.bundle.documents if doc.stage == "tir"]
    if not tir:
        return "a part"
    text = view.bundle.text(tir[-1])
    index = view.bundle.index(tir[-1])
    bodies = [r for r in index.by_key(f"prim:{function}") if r.kind == "primfunc"]
    names: list[str] = []
    for lid in layer_ids:
        for rng in view.layer_map.ranges(lid, tir[-1]):
            if rng.kind == "stmt" and any(b.start <= rng.start < b.end for b in bodies):
                m = _STORE.match(text, rng.start, rng.end)
                if m and m.group(1) not in names:
                    names.append(m.group(1))
    if not names:
        return "a part"
    for prefix, said in _PARTS:
        if all(n.startswith(prefix) for n in names):
            return said
    return ", ".join(names[:3]) + (" …" if len(names) > 3 else "")


def part_note(view: BundleView, part: KernelPart, home: str = "") -> str:
    """ "op 2 CONV_2D: input dequantize only — in the kernel of op 1 MAX_POOL_2D" (or "— a kernel
    of its own; the output is computed in ``home``")."""
    layers = view.bundle.layers
    held = ", ".join(f"op {layers[i].op_index} {layers[i].opcode}" for i in part.layers)
    if part.hosts:
        hosts = ", ".join(f"op {layers[i].op_index} {layers[i].opcode}" for i in part.hosts[:2])
        more = f" +{len(part.hosts) - 2}" if len(part.hosts) > 2 else ""
        where = f"in the kernel of {hosts}{more}"
    else:
        where = "a kernel of its own" + (f"; the output is computed in {home}" if home else "")
    return f"{held}: {part.what} only — {where}"


def ffi_wrappers(view: BundleView, places: list[Place]) -> set[Place]:
    """The function places of ``places`` that only wrap another range of the same key holding
    the statements (LLVM's ``@__tvm_ffi_<name>`` argument checks before ``<name>_compute_``)."""
    out: set[Place] = set()
    functions = [p for p in places if p.kind in FUNCTION_KINDS]
    if not functions:
        return out
    starts: dict[str, list[int]] = {}
    for p in places:
        if p.kind not in FUNCTION_KINDS:
            starts.setdefault(p.path, []).append(p.start)
    for found in starts.values():
        found.sort()
    for p in functions:
        inner = starts.get(p.path)
        if not inner:
            continue
        for other in view.bundle.index(p.path).by_key(p.key):
            if (other.start, other.end) == (p.start, p.end) or other.kind not in FUNCTION_KINDS:
                continue
            # a statement of these layers lies in the other range of the same function
            i = bisect_right(inner, other.start - 1)
            if i < len(inner) and inner[i] < other.end:
                out.add(p)
                break
    return out

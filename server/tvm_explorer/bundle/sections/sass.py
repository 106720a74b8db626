"""``sass.json`` (``compile --target cuda --sass ARCH``): each kernel's machine facts and each
layer's share of the machine code; validation on load and what the editor reads. No TVM here."""

from __future__ import annotations

from typing import TypedDict, cast

from tvm_explorer.bundle import fields as f
from tvm_explorer.bundle.sections import Section

SASS_FILE = "sass.json"


class SassError(ValueError):
    """``sass.json`` does not have the documented shape."""


class _KernelRequired(TypedDict):
    name: str
    registers: int
    instructions: int


class SassKernel(_KernelRequired, total=False):
    """One kernel: what ptxas reports, its launch bounds and occupancy estimate."""

    spill_stores: int
    spill_loads: int
    stack: int
    local: int
    shared: int
    barriers: int
    threads_per_block: int | None
    occupancy: float | None
    occupancy_limit: str | None
    layers: list[int]


class SassLayer(TypedDict, total=False):
    """A layer's machine code: its instructions over all kernels, the kernels, and the most
    registers / spilled bytes / lowest occupancy of those kernels."""

    instructions: int
    kernels: list[str]
    registers: int
    spilled: int
    min_occupancy: float | None


class SassDocument(TypedDict):
    """A validated ``sass.json``."""

    schema_version: int  # 1
    arch: str
    nvcc: str
    document: str
    source: str
    kernels: list[SassKernel]
    layers: dict[str, SassLayer]


_COUNTS = ("spill_stores", "spill_loads", "stack", "local", "shared", "barriers")


def validate(data: object, n_layers: int) -> SassDocument:
    """Check the documented shape (docs/bundle-format.md) and the range of every value shown."""
    if not isinstance(data, dict) or data.get("schema_version") != 1:
        raise SassError("must be an object with schema_version 1")
    for key in ("arch", "nvcc", "document", "source"):
        f.string(data.get(key), f"'{key}'", SassError)
    for i, k in f.objects(data.get("kernels"), "'kernels'", "kernel", SassError):
        f.string(k.get("name"), f"kernel {i}: 'name'", SassError)
        f.integer(k.get("registers"), f"kernel {i}: 'registers'", SassError, high=65536)
        f.integer(k.get("instructions"), f"kernel {i}: 'instructions'", SassError)
        for key in _COUNTS:
            f.integer(k.get(key, 0), f"kernel {i}: '{key}'", SassError)
        f.integer(k.get("threads_per_block"), f"kernel {i}: 'threads_per_block'", SassError, nullable=True, high=4096)
        f.number(k.get("occupancy"), f"kernel {i}: 'occupancy'", SassError, low=0, high=1)
        f.string(k.get("occupancy_limit"), f"kernel {i}: 'occupancy_limit'", SassError, nullable=True)
        for layer in k.get("layers", []):
            f.integer(layer, f"kernel {i}: 'layers'", SassError, high=max(n_layers - 1, 0))
    layers = data.get("layers")
    if not isinstance(layers, dict):
        raise SassError("'layers' must be an object")
    for key, row in layers.items():
        if not (key.isdigit() and int(key) < n_layers):
            raise SassError(f"'layers': {key!r} is not a layer of this bundle")
        f.obj(row, f"layer {key}", SassError)
        for name in ("instructions", "registers", "spilled"):
            f.integer(row.get(name, 0), f"layer {key}: '{name}'", SassError)
        f.strings(row.get("kernels", []), f"layer {key}: 'kernels'", SassError)
        f.number(row.get("min_occupancy"), f"layer {key}: 'min_occupancy'", SassError, low=0, high=1)
    return cast(SassDocument, data)


SECTION = Section(SASS_FILE, "machine-code facts", lambda data, layers: validate(data, len(layers)))


def kernel_facts(data: SassDocument, name: str) -> SassKernel | None:
    """The facts of kernel ``name`` (``fused_conv2d_add_relu_kernel``), if recorded."""
    return next((k for k in data["kernels"] if k["name"] == name), None)

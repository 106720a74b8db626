"""``memory.json``: the memory timeline of a compiled model (what is held at every call, the
peak, what makes it up), and what a real run allocated beside it.

Built once while compiling (``memory/``), validated by every reader (``validate``), read only
when something asks (``Bundle.memory``: never at load). The shape is documented in
docs/bundle-format.md; docs/memory.md says what each number counts.
"""

from __future__ import annotations

from typing import TypedDict, cast

from tvm_explorer.bundle import fields as f
from tvm_explorer.bundle.sections import Section

MEMORY_FILE = "memory.json"
SCHEMA_VERSION = 1
TOLERANCE_SHARE = 0.05
TOLERANCE_BYTES = 256 * 1024
"""A measured figure agrees with the replayed allocators when it is within 5 % of it plus
256 KiB: malloc's headers and alignment, the VM's own objects (a few hundred bytes per
tensor) and page rounding of mapped chunks (docs/memory.md)."""


class MemoryError_(ValueError):
    """``memory.json`` does not have the documented shape."""


# -- the validated shape ---------------------------------------------------------------------


class MemoryInput(TypedDict):
    name: str
    shape: list[int | str]
    dtype: str
    bytes: int | None


class MemoryView(TypedDict):
    var: str
    step: int
    layers: list[int]


class MemoryStorage(TypedDict):
    """One allocation: ``kind`` planned (``alloc_storage``), own (a tensor allocated alone)
    or returned (a call's result, allocated by the callee)."""

    id: int
    var: str
    ordinal: int
    bytes: int | None
    size: str
    scope: str
    kind: str
    first_step: int | None
    last_step: int | None
    to_end: bool
    tensors: list[int]
    layers: list[int]
    returned_by: str | None


class MemoryTensor(TypedDict):
    id: int
    var: str
    ordinal: int
    shape: list[int | str]
    dtype: str
    bytes: int | None
    storage: int
    offset: int
    layer: int | None
    layers: list[int]
    producer: int | None
    last_use: int | None
    first_step: int | None
    last_step: int | None
    to_end: bool
    steps_alive: int
    output: bool
    views: list[MemoryView]


class MemoryStep(TypedDict):
    index: int
    callee: str
    kind: str  # kernel | builtin | function | view
    layers: list[int]
    var: str
    ordinal: int
    live_bytes: int
    scratch_bytes: int
    stack_bytes: int
    total_bytes: int
    runtime_bytes: int
    pooled_bytes: int
    unknown: int


class MemoryBuffer(TypedDict):
    name: str
    bytes: int | None
    where: str  # heap | stack


class MemoryKernel(TypedDict):
    name: str
    workspace_bytes: int | None
    stack_bytes: int
    per_thread: bool
    buffers: list[MemoryBuffer]


class MemoryPeak(TypedDict):
    step: int | None
    bytes: int
    live_bytes: int
    scratch_bytes: int
    unknown: int


class MemoryPredicted(TypedDict):
    naive_peak_bytes: int
    pooled_bytes: int
    workspace_pool_bytes: int


class _MeasuredRequired(TypedDict):
    status: str  # measured | not_requested | unavailable | failed
    reason: str | None


class MemoryMeasured(_MeasuredRequired, total=False):
    method: str | None
    where: str  # "this machine", or the remote device's description and address
    naive_peak_bytes: int
    pooled_bytes: int
    naive_within: bool | None
    pooled_within: bool | None
    steps: list[int | None]
    truncated: bool


class MicroReference(TypedDict, total=False):
    """TFLite Micro's arena for the same model (``frontends/tflite/arena.py``)."""

    engine: str
    arena_bytes: int
    head_bytes: int  # the non-persistent plan: activations and scratch
    tail_bytes: int  # what persists: tensor structs, kernels' data
    method: str
    error: str


class MemoryReference(TypedDict, total=False):
    engine: str
    arena_bytes: int
    tensors: int
    method: str
    error: str
    micro: MicroReference


class MemorySymbol(TypedDict):
    name: str
    value: int | None
    source: str | None  # "tir_var_upper_bound" | "inputs" | None (unbounded)


class MemoryDocument(TypedDict):
    """A validated ``memory.json``."""

    schema_version: int
    function: str
    target: str | None
    analysed: dict[str, str | None]  # {"pass", "document"}
    analysis_ms: float
    symbols: list[MemorySymbol]
    inputs: list[MemoryInput]
    constants: dict[str, int]  # {"count", "bytes"}
    storages: list[MemoryStorage]
    tensors: list[MemoryTensor]
    steps: list[MemoryStep]
    kernels: list[MemoryKernel]
    peak: MemoryPeak
    predicted: MemoryPredicted
    measured: MemoryMeasured
    reference: MemoryReference | None
    tolerance: dict[str, float]
    notes: list[str]


# -- validation ---------------------------------------------------------------------------
E = MemoryError_


def _int(value, where: str, *, nullable: bool = False, high: int = f.MAX_INT) -> None:
    f.integer(value, where, E, nullable=nullable, high=high)


def _ids(value, where: str, high: int) -> None:
    """A list of ids, each below ``high``."""
    if not isinstance(value, list):
        raise E(f"{where} must be a list")
    for i, v in enumerate(value):
        f.integer(v, f"{where}[{i}]", E, high=max(high - 1, 0))
        if v >= high:
            raise E(f"{where}[{i}] names something the file does not have")


def _objects(value, where: str, key: str, what: str):
    """The objects of the list ``key`` of an entry, each with how messages name it
    (``tensor entry 3: view 0``)."""
    if not isinstance(value, list):
        raise E(f"{where}: '{key}' must be a list")
    for j, item in enumerate(value):
        f.obj(item, f"{where}: {what} {j}", E)
        yield item, f"{where}: {what} {j}"


def _shape(value, where: str) -> None:
    if not isinstance(value, list) or not all(
        (isinstance(d, int) and not isinstance(d, bool) and 0 <= d <= f.MAX_INT) or isinstance(d, str) for d in value
    ):
        raise E(f"{where} must be a list of dimensions (integers or names)")


def _step_range(first, last, where: str, steps: int) -> None:
    _int(first, f"{where}: 'first_step'", nullable=True, high=max(steps - 1, 0))
    _int(last, f"{where}: 'last_step'", nullable=True, high=max(steps - 1, 0))
    if (first is None) != (last is None) or (first is not None and (first >= steps or last < first)):
        raise E(f"{where}: 'first_step' and 'last_step' must be steps of the file, in order")


def _check_storage(st, i: int, steps: int, tensors: int, layers: int) -> None:
    where = f.entry(st, "storage", i, E)
    for key in ("var", "size", "scope", "kind"):
        f.string(st.get(key), f"{where}: '{key}'", E)
    _int(st.get("ordinal"), f"{where}: 'ordinal'")
    _int(st.get("bytes"), f"{where}: 'bytes'", nullable=True)
    _step_range(st.get("first_step"), st.get("last_step"), where, steps)
    f.boolean(st.get("to_end"), f"{where}: 'to_end'", E)
    _ids(st.get("tensors"), f"{where}: 'tensors'", tensors)
    _ids(st.get("layers"), f"{where}: 'layers'", layers)
    f.string(st.get("returned_by"), f"{where}: 'returned_by'", E, nullable=True)


def _check_tensor(t, i: int, steps: int, storages: int, layers: int) -> None:
    where = f.entry(t, "tensor", i, E)
    for key in ("var", "dtype"):
        f.string(t.get(key), f"{where}: '{key}'", E)
    _shape(t.get("shape"), f"{where}: 'shape'")
    for key in ("ordinal", "offset", "steps_alive"):
        _int(t.get(key), f"{where}: '{key}'")
    _int(t.get("bytes"), f"{where}: 'bytes'", nullable=True)
    _int(t.get("storage"), f"{where}: 'storage'", high=max(storages - 1, 0))
    if t["storage"] >= storages:
        raise E(f"{where}: 'storage' names a storage the file does not have")
    _int(t.get("layer"), f"{where}: 'layer'", nullable=True, high=max(layers - 1, 0))
    if t.get("layer") is not None and t["layer"] >= layers:
        raise E(f"{where}: 'layer' names a layer the bundle does not have")
    _ids(t.get("layers"), f"{where}: 'layers'", layers)
    for key in ("producer", "last_use"):
        _int(t.get(key), f"{where}: '{key}'", nullable=True, high=max(steps - 1, 0))
        if t.get(key) is not None and t[key] >= steps:
            raise E(f"{where}: '{key}' names a step the file does not have")
    _step_range(t.get("first_step"), t.get("last_step"), where, steps)
    for key in ("to_end", "output"):
        f.boolean(t.get(key), f"{where}: '{key}'", E)
    for v, at in _objects(t.get("views"), where, "views", "view"):
        f.string(v.get("var"), f"{at}: 'var'", E)
        _int(v.get("step"), f"{at}: 'step'", high=max(steps - 1, 0))
        _ids(v.get("layers"), f"{at}: 'layers'", layers)


_STEP_BYTES = ("live_bytes", "scratch_bytes", "stack_bytes", "total_bytes", "runtime_bytes", "pooled_bytes")


def _check_step(s, i: int, layers: int) -> None:
    where = f"step entry {i}"
    f.obj(s, where, E)
    _int(s.get("index"), f"{where}: 'index'")
    if s["index"] != i:
        raise E(f"{where}: 'index' must be {i}")
    for key in ("callee", "kind", "var"):
        f.string(s.get(key), f"{where}: '{key}'", E)
    _ids(s.get("layers"), f"{where}: 'layers'", layers)
    for key in ("ordinal", "unknown", *_STEP_BYTES):
        _int(s.get(key), f"{where}: '{key}'")


def _check_kernel(k, i: int) -> None:
    where = f"kernel entry {i}"
    f.obj(k, where, E)
    f.string(k.get("name"), f"{where}: 'name'", E)
    _int(k.get("workspace_bytes"), f"{where}: 'workspace_bytes'", nullable=True)
    _int(k.get("stack_bytes"), f"{where}: 'stack_bytes'")
    f.boolean(k.get("per_thread"), f"{where}: 'per_thread'", E)
    for b, at in _objects(k.get("buffers"), where, "buffers", "buffer"):
        f.string(b.get("name"), f"{at}: 'name'", E)
        f.string(b.get("where"), f"{at}: 'where'", E)
        _int(b.get("bytes"), f"{at}: 'bytes'", nullable=True)


def _check_measured(m, steps: int) -> None:
    f.obj(m, "'measured'", E)
    f.string(m.get("status"), "'measured': 'status'", E)
    f.string(m.get("reason"), "'measured': 'reason'", E, nullable=True)
    if "method" in m:
        f.string(m["method"], "'measured': 'method'", E, nullable=True)
    if "where" in m:
        f.string(m["where"], "'measured': 'where'", E)
    for key in ("naive_peak_bytes", "pooled_bytes"):
        if key in m:
            f.integer(m[key], f"'measured': '{key}'", E, low=-f.MAX_INT)
    for key in ("naive_within", "pooled_within"):
        if m.get(key) is not None:
            f.boolean(m[key], f"'measured': '{key}'", E)
    if "truncated" in m:
        f.boolean(m["truncated"], "'measured': 'truncated'", E)
    if "steps" in m:
        samples = m["steps"]
        if not isinstance(samples, list) or len(samples) != steps:
            raise E("'measured': 'steps' must be a list with one entry per step")
        for i, v in enumerate(samples):
            f.integer(v, f"'measured': 'steps'[{i}]", E, nullable=True, low=-f.MAX_INT)


def _check_reference(r, where: str = "'reference'") -> None:
    if r is None:
        return
    f.obj(r, where, E)
    for key in ("engine", "method", "error"):
        if key in r:
            f.string(r[key], f"{where}: '{key}'", E)
    for key in ("arena_bytes", "tensors", "head_bytes", "tail_bytes"):
        if key in r:
            _int(r[key], f"{where}: '{key}'")
    if "micro" in r and where == "'reference'":
        _check_reference(r["micro"], "'reference': 'micro'")


def validate(data, layer_count: int) -> MemoryDocument:
    """Check the documented shape (docs/bundle-format.md): the type and range of every value
    a reader formats or adds up, and every reference between entries; returns ``data``."""
    f.document(data, SCHEMA_VERSION, E)
    f.string(data.get("function"), "'function'", E)
    f.string(data.get("target"), "'target'", E, nullable=True)
    f.number(data.get("analysis_ms"), "'analysis_ms'", E, nullable=False)
    analysed = f.obj(data.get("analysed"), "'analysed'", E)
    for key in ("pass", "document"):
        f.string(analysed.get(key), f"'analysed': '{key}'", E, nullable=True)
    for key in ("symbols", "inputs", "storages", "tensors", "steps", "kernels", "notes"):
        if not isinstance(data.get(key), list):
            raise E(f"'{key}' must be a list")
    for i, s in enumerate(data["symbols"]):
        f.obj(s, f"symbol {i}", E)
        f.string(s.get("name"), f"symbol {i}: 'name'", E)
        _int(s.get("value"), f"symbol {i}: 'value'", nullable=True)
        f.string(s.get("source"), f"symbol {i}: 'source'", E, nullable=True)
    for i, r in enumerate(data["inputs"]):
        f.obj(r, f"input {i}", E)
        f.string(r.get("name"), f"input {i}: 'name'", E)
        f.string(r.get("dtype"), f"input {i}: 'dtype'", E)
        _shape(r.get("shape"), f"input {i}: 'shape'")
        _int(r.get("bytes"), f"input {i}: 'bytes'", nullable=True)
    constants = f.obj(data.get("constants"), "'constants'", E)
    for key in ("count", "bytes"):
        _int(constants.get(key), f"'constants': '{key}'")
    steps, storages, tensors = len(data["steps"]), len(data["storages"]), len(data["tensors"])
    for i, st in enumerate(data["storages"]):
        _check_storage(st, i, steps, tensors, layer_count)
    for i, t in enumerate(data["tensors"]):
        _check_tensor(t, i, steps, storages, layer_count)
    for i, s in enumerate(data["steps"]):
        _check_step(s, i, layer_count)
    for i, k in enumerate(data["kernels"]):
        _check_kernel(k, i)
    peak = f.obj(data.get("peak"), "'peak'", E)
    _int(peak.get("step"), "'peak': 'step'", nullable=True, high=max(steps - 1, 0))
    if peak.get("step") is not None and peak["step"] >= steps:
        raise E("'peak': 'step' names a step the file does not have")
    for key in ("bytes", "live_bytes", "scratch_bytes", "unknown"):
        _int(peak.get(key), f"'peak': '{key}'")
    predicted = f.obj(data.get("predicted"), "'predicted'", E)
    for key in ("naive_peak_bytes", "pooled_bytes", "workspace_pool_bytes"):
        _int(predicted.get(key), f"'predicted': '{key}'")
    _check_measured(data.get("measured"), steps)
    _check_reference(data.get("reference"))
    tolerance = f.obj(data.get("tolerance"), "'tolerance'", E)
    for key in ("share", "bytes"):
        f.number(tolerance.get(key), f"'tolerance': '{key}'", E, nullable=False)
    f.strings(data["notes"], "'notes'", E)
    return cast(MemoryDocument, data)


SECTION = Section(MEMORY_FILE, "memory timeline", lambda data, layers: validate(data, len(layers)), damage_raises=True)


# -- reading ------------------------------------------------------------------------------


def held_at(data: MemoryDocument, step: int) -> tuple[list[MemoryStorage], list[MemoryTensor]]:
    """The storages held and the tensors alive during ``step``."""

    def during(entry) -> bool:
        first, last = entry["first_step"], entry["last_step"]
        return first is not None and first <= step <= last

    return [s for s in data["storages"] if during(s)], [t for t in data["tensors"] if during(t)]


def at_binding(data: MemoryDocument, var: str, ordinal: int) -> tuple[MemoryStorage | None, MemoryTensor | None]:
    """The storage and/or tensor that the ``ordinal``-th binding of ``var`` allocates."""
    storage = next((s for s in data["storages"] if s["var"] == var and s["ordinal"] == ordinal), None)
    tensor = next((t for t in data["tensors"] if t["var"] == var and t["ordinal"] == ordinal), None)
    return storage, tensor

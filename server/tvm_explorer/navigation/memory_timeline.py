"""The memory timeline as a picture draws it: bytes held at every step of the model's function,
split into bands — the largest storages (each with the tensors it holds in turn, their layers
and their allocation lines in Relax), the kernels' scratch, and everything else summed as
"other" — and the peak; with ``--profile``, the bytes a run really held after each step and one
caption line checking it against the static figure. Protocol-free: the editor's request
(``lsp/features/memory.py``) and the static report (``graphview/document.py``) turn the places
into their own links.

Bounded for big models: at most ``bands`` storages (the ones held at the peak first, largest
first), ``MAX_TENSORS`` tensors per storage; the steps themselves are three numbers each."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypedDict

from tvm_explorer.bundle.reader import Bundle
from tvm_explorer.bundle.sections.memory import MemoryDocument, MemoryPeak, MemoryStorage
from tvm_explorer.errors import BundleError, ExplorerError
from tvm_explorer.inert.text import one_line
from tvm_explorer.memory.table import measured_caption, tensor_text
from tvm_explorer.navigation.view import BundleView, Place
from tvm_explorer.tablenames import shown_name

DEFAULT_BANDS = 16
MAX_BANDS = 64
MAX_TENSORS = 32

Locate = Callable[[Place], Any]
"""Turns a place (a document path and its text offsets) into what the reader links to."""


class NoTimeline(ExplorerError):
    """The bundle has no usable memory timeline (no or a damaged memory.json, nothing called)."""


# The picture's data, mirrored by ``vscode-extension/webview/memory/types.ts`` (the field names
# are compared by ``tests/lsp/test_protocol_fields.py``). A place is what ``locate`` made.


class TimelineLayer(TypedDict):
    id: int
    opcode: str
    name: str
    location: Any


class TimelineTensor(TypedDict):
    var: str
    text: str
    bytes: int | None
    first_step: int | None
    last_step: int | None
    layer: int | None
    alloc: Any


class TimelineBand(TypedDict):
    storage: int
    var: str
    kind: str
    bytes: int | None
    first_step: int | None
    last_step: int | None
    to_end: bool
    alloc: Any
    layers: list[int]
    tensors: list[TimelineTensor]
    more_tensors: int


class TimelineStep(TypedDict):
    callee: str
    kind: str
    layer: int | None
    total: int
    scratch: int
    other: int


class TimelineMeasured(TypedDict):
    """What a run allocated, drawn over the static bands: ``steps`` are the bytes in use after
    each step's kernel call in the run with the VM's naive allocator (it frees a storage when
    its last reference goes, as the plan does: the run comparable to the bands; null at a step
    that calls no kernel, empty when nothing was measured); ``peak_step`` the step of the
    largest sample; ``replayed`` what TVM's naive allocator and CPU workspace pool hold after
    each step when replayed on the plan (the static figure the run is checked against: above
    the bands where the pool keeps scratch pages; empty when nothing was measured); ``caption`` one line saying where, the peak beside the static one and the
    verdict, or why nothing was measured (``status`` not ``measured``)."""

    status: str
    allocator: str | None
    where: str | None
    steps: list[int | None]
    replayed: list[int]
    peak_step: int | None
    peak_bytes: int | None
    static_bytes: int | None
    within: bool | None
    caption: str


class _TimelineFields(TypedDict):
    function: str
    document: str | None
    peak: MemoryPeak
    steps: list[TimelineStep]
    bands: list[TimelineBand]
    other_storages: int
    unsized_storages: int
    constants_bytes: int
    layers: list[TimelineLayer]
    notes: list[str]
    measured: TimelineMeasured


class Timeline(_TimelineFields, total=False):
    """The whole picture (``root``: the bundle's URI, where the editor asked for it)."""

    root: str


def _analysed_path(bundle: Bundle, data: MemoryDocument) -> str | None:
    """The Relax document the plan was read from (the last Relax document when not said)."""
    path = data["analysed"].get("document")
    if path and bundle.document(path) is not None:
        return path
    relax = [d for d in bundle.documents if d.stage == "relax"]
    return max(relax, key=lambda d: d.order).path if relax else None


def _bindings(bundle: Bundle, path: str | None, function: str) -> Callable[[str, int], Place | None]:
    """The place of the ``ordinal``-th binding of a variable in ``function`` of ``path`` (the
    allocating line the alloc hover answers on)."""
    if path is None:
        return lambda _var, _ordinal: None
    index = bundle.index(path)

    def find(var: str, ordinal: int) -> Place | None:
        found = sorted(index.by_key(f"bind:{function}:{var}"), key=lambda r: r.start)
        if not 0 <= ordinal < len(found):
            return None
        r = found[ordinal]
        return Place(path, r.start, r.end, r.kind, r.key)

    return find


def _ranked(data: MemoryDocument) -> list[MemoryStorage]:
    """Storages worth a band of their own: held at the peak first, then by bytes × steps held."""
    peak = data["peak"]["step"]

    def key(s: MemoryStorage) -> tuple:
        first, last, size = s["first_step"] or 0, s["last_step"] or 0, s["bytes"] or 0
        at_peak = peak is not None and first <= peak <= last
        return (not at_peak, -size if at_peak else -size * (last - first + 1), s["id"])

    drawable = [s for s in data["storages"] if s["bytes"] and s["first_step"] is not None]
    return sorted(drawable, key=key)


def _measured(data: MemoryDocument) -> TimelineMeasured:
    """The measured line and its caption (``memory/table.py`` says the caption)."""
    m = data["measured"]
    caption = measured_caption(data)
    if m["status"] != "measured":
        return {
            "status": m["status"],
            "allocator": None,
            "where": None,
            "steps": [],
            "replayed": [],
            "peak_step": None,
            "peak_bytes": None,
            "static_bytes": None,
            "within": None,
            "caption": caption,
        }
    samples = list(m.get("steps") or [])[: len(data["steps"])]
    samples += [None] * (len(data["steps"]) - len(samples))
    sampled = [(v, i) for i, v in enumerate(samples) if v is not None]
    return {
        "status": "measured",
        "allocator": "naive",
        "where": shown_name(one_line(m.get("where") or "this machine")),
        "steps": samples,
        "replayed": [s["runtime_bytes"] for s in data["steps"]],
        "peak_step": max(sampled, key=lambda vi: (vi[0], -vi[1]))[1] if sampled else None,
        "peak_bytes": m.get("naive_peak_bytes"),
        "static_bytes": data["predicted"]["naive_peak_bytes"],
        "within": m.get("naive_within"),
        "caption": caption,
    }


def timeline(view: BundleView, locate: Locate, *, bands: int = DEFAULT_BANDS) -> Timeline:
    """The picture's data (``NoTimeline``: why the bundle has none)."""
    bundle = view.bundle
    try:
        data = bundle.memory()
    except BundleError as err:
        raise NoTimeline(str(err)) from None
    if data is None:
        raise NoTimeline("this bundle has no memory timeline (memory.json): recompile it with this tvm-explorer")
    if not data["steps"]:
        raise NoTimeline("the model's function calls nothing: no memory timeline")
    bands = max(1, min(int(bands), MAX_BANDS))
    path = _analysed_path(bundle, data)
    binding = _bindings(bundle, path, data["function"])
    layers: dict[int, TimelineLayer] = {}

    def layer(lid: int | None) -> int | None:
        if lid is None or not 0 <= lid < len(bundle.layers):
            return None
        if lid not in layers:
            lay = bundle.layers[lid]
            entries = view.layer_map.model_places.get(lid)
            layers[lid] = {
                "id": lid,
                "opcode": lay.opcode,
                "name": shown_name(lay.name),  # a hostile model may give a name of megabytes
                "location": locate(entries[0]) if entries else None,
            }
        return lid

    def alloc(var: str, ordinal: int) -> Any:
        place = binding(var, ordinal)
        return locate(place) if place is not None else None

    ranked = _ranked(data)
    chosen = ranked[:bands]
    steps = data["steps"]
    banded = [0] * len(steps)
    out_bands: list[TimelineBand] = []
    for s in chosen:
        for i in range(s["first_step"] or 0, (s["last_step"] or 0) + 1):  # drawable: both set
            banded[i] += s["bytes"] or 0
        tensors = [data["tensors"][tid] for tid in s["tensors"]]
        out_bands.append(
            {
                "storage": s["id"],
                "var": s["var"],
                "kind": s["kind"],
                "bytes": s["bytes"],
                "first_step": s["first_step"],
                "last_step": s["last_step"],
                "to_end": s["to_end"],
                "alloc": alloc(s["var"], s["ordinal"]),
                "layers": [lid for lid in (layer(x) for x in s["layers"]) if lid is not None],
                "tensors": [
                    {
                        "var": t["var"],
                        "text": tensor_text(t),
                        "bytes": t["bytes"],
                        "first_step": t["first_step"],
                        "last_step": t["last_step"],
                        "layer": layer(t["layer"]),
                        "alloc": alloc(t["var"], t["ordinal"]),
                    }
                    for t in tensors[:MAX_TENSORS]
                ],
                "more_tensors": max(0, len(tensors) - MAX_TENSORS),
            }
        )
    return {
        "function": data["function"],
        "document": path,
        "peak": data["peak"],
        "steps": [
            {
                "callee": s["callee"],
                "kind": s["kind"],
                "layer": layer(s["layers"][0]) if s["layers"] else None,
                "total": s["total_bytes"],
                "scratch": s["scratch_bytes"],
                "other": max(0, s["live_bytes"] - banded[i]),
            }
            for i, s in enumerate(steps)
        ],
        "bands": out_bands,
        "other_storages": len(ranked) - len(chosen),
        "unsized_storages": sum(1 for s in data["storages"] if s["bytes"] is None),
        "constants_bytes": data["constants"]["bytes"],
        "layers": [layers[k] for k in sorted(layers)],
        "notes": list(data["notes"]),
        "measured": _measured(data),
    }

"""The memory timeline as the editor shows it: hovering an ``alloc_storage`` or ``alloc_tensor``
line of Relax says which layers' tensors live in that memory and when. Protocol-free; reads
``memory.json`` on the first such hover (never when a bundle loads)."""

from __future__ import annotations

from tvm_explorer.bundle.index import Range
from tvm_explorer.bundle.reader import Bundle
from tvm_explorer.bundle.sections.memory import MemoryDocument, MemoryStorage, MemoryTensor, at_binding
from tvm_explorer.errors import BundleError
from tvm_explorer.inert import markdown as md
from tvm_explorer.memory.table import size, tensor_text

MAX_TENSORS = 8  # tensors of one storage a hover lists
_ALLOCATIONS = ("alloc_storage(", "alloc_tensor(")


def _memory(bundle: Bundle) -> MemoryDocument | str | None:
    try:
        return bundle.memory()
    except BundleError as err:
        return str(err)


def _answers_in(bundle: Bundle, data: MemoryDocument, path: str) -> bool:
    """Whether ``path`` is the Relax document the plan was read from or a later one (earlier
    ones may name their bindings differently: the plan is not there yet)."""
    doc = bundle.document(path)
    analysed = bundle.document(data["analysed"].get("document") or "")
    if doc is None or doc.stage != "relax":
        return False
    if analysed is None:
        return data["analysed"].get("pass") is None and doc.order == max(
            d.order for d in bundle.documents if d.stage == "relax"
        )
    return doc.order >= analysed.order


def _binding(bundle: Bundle, path: str, ranges: list[Range]) -> tuple[Range, str, str, int] | None:
    """The allocating binding under the mouse: (range, function, variable, ordinal)."""
    rng = next((r for r in ranges if r.kind == "binding" and r.key.startswith("bind:")), None)
    if rng is None:
        return None
    text = bundle.text(path)[rng.start : rng.end]
    if not any(a in text for a in _ALLOCATIONS):
        return None
    function, _, var = rng.key[len("bind:") :].partition(":")
    ordinal = sum(1 for r in bundle.index(path).by_key(rng.key) if r.start < rng.start)
    return rng, function, var, ordinal


def _layer(bundle: Bundle, lid: int | None) -> str:
    if lid is None or not 0 <= lid < len(bundle.layers):
        return "no layer"
    lay = bundle.layers[lid]
    return f"**{md.text(lay.opcode)}**" + (f" {md.code(lay.name)}" if lay.name else "")


def _steps(entry: MemoryStorage | MemoryTensor) -> str:
    if entry["first_step"] is None:
        return "at no call"
    end = "the end (returned)" if entry["to_end"] else f"step {entry['last_step']}"
    return f"from step {entry['first_step']} to {end}"


def _tensor_line(bundle: Bundle, data: MemoryDocument, t: MemoryTensor) -> str:
    parts = [f"{md.code(tensor_text(t))} {size(t['bytes'])}, {_steps(t)}: output of {_layer(bundle, t['layer'])}"]
    if t["last_use"] is not None and not t["output"]:
        reader = data["steps"][t["last_use"]]
        who = _layer(bundle, reader["layers"][0]) if reader["layers"] else md.code(reader["callee"])
        parts.append(f"last read at step {t['last_use']} by {who}")
    for v in t["views"][:2]:
        parts.append(f"viewed as {md.code(v['var'])} by {_layer(bundle, v['layers'][0] if v['layers'] else None)}")
    return "; ".join(parts)


def _peak_line(data: MemoryDocument, storage: MemoryStorage) -> str:
    peak = data["peak"]
    step = peak["step"]
    first, last = storage["first_step"], storage["last_step"]
    if step is None or first is None or last is None or not first <= step <= last or not peak["bytes"]:
        return f"Not held at the peak ({size(peak['bytes'])} at step {step})."
    share = 100 * (storage["bytes"] or 0) / peak["bytes"]
    return f"Held at the peak (step {step}, {size(peak['bytes'])}): {share:.0f} % of it."


def _same_allocation(text: str, storage: MemoryStorage | None, tensor: MemoryTensor | None) -> bool:
    """Whether the binding's text allocates what the plan says (its size, its shape)."""
    if "alloc_tensor(" in text and tensor is not None:
        shape = tensor["shape"]
        return not all(isinstance(d, int) for d in shape) or "[" + ", ".join(map(str, shape)) + "]" in text
    if "alloc_storage(" in text and storage is not None:
        return not storage["size"].isdigit() or f"[{storage['size']}]" in text
    return False


def hover_lines(bundle: Bundle, path: str, ranges: list[Range]) -> list[str]:
    """Markdown lines for a hover on an allocation in Relax: the storage (its size, when it is
    held, which layers' tensors it holds in turn) or the tensor (where it lives, who writes
    and last reads it). Empty elsewhere."""
    found = _binding(bundle, path, ranges)
    if found is None:
        return []
    rng, function, var, ordinal = found
    data = _memory(bundle)
    if isinstance(data, str):
        return ["\n- **Memory** unavailable: " + md.text(data)]
    if data is None or function != data["function"] or not _answers_in(bundle, data, path):
        return []
    storage, tensor = at_binding(data, var, ordinal)
    text = bundle.text(path)[rng.start : rng.end]
    if not _same_allocation(text, storage, tensor):
        return []  # the document's bindings do not line up with the plan's
    out: list[str] = []
    if tensor is not None and "alloc_tensor(" in text:
        where = data["storages"][tensor["storage"]]
        out.append(
            f"\n**Memory** tensor {_tensor_line(bundle, data, tensor)}; in storage #{where['id']} "
            f"({size(where['bytes'])}) at offset {tensor['offset']}"
        )
        others = [data["tensors"][tid] for tid in where["tensors"] if tid != tensor["id"]]
        if others:
            out.append(
                "- the same storage holds, in turn: "
                + ", ".join(
                    f"{md.code(o['var'])} ({_layer(bundle, o['layer'])}, {_steps(o)})" for o in others[:MAX_TENSORS]
                )
                + (f" and {len(others) - MAX_TENSORS} more" if len(others) > MAX_TENSORS else "")
            )
        storage = where if storage is None else storage
    elif storage is not None:
        kind = {"planned": "planned by StaticPlanBlockMemory", "own": "allocated for one tensor"}.get(
            storage["kind"], f"allocated by {storage.get('returned_by')}"
        )
        inside = [data["tensors"][tid] for tid in storage["tensors"]]
        out.append(
            f"\n**Memory** storage #{storage['id']}: {size(storage['bytes'])} ({md.text(kind)}), held {_steps(storage)}; "
            f"{len(inside)} tensor{'s' if len(inside) != 1 else ''} in turn:"
        )
        out.extend(f"- {_tensor_line(bundle, data, t)}" for t in inside[:MAX_TENSORS])
        if len(inside) > MAX_TENSORS:
            out.append(f"- … {len(inside) - MAX_TENSORS} more (`tvm-explorer memory BUNDLE --json`)")
    else:
        return []
    out.append("\n" + _peak_line(data, storage))
    return out

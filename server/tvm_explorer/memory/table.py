"""``tvm-explorer memory BUNDLE``: what is held at the peak (or at any step), what would lower
it, which layers share a storage, the static figures beside the measured ones, and the
timeline, biggest steps first. Works on a validated ``memory.json`` only (no TVM): the editor
reads the same answers."""

from __future__ import annotations

from collections.abc import Callable

from tvm_explorer.bundle.sections.memory import MemoryDocument, MemoryStep, MemoryTensor, held_at
from tvm_explorer.inert.text import one_line
from tvm_explorer.tablenames import shown_name

Label = Callable[[int], str]
"""A layer id as a table names it (``op 3 CONV_2D conv1``)."""

MAX_ADVICE = 3  # tensors and kernels "what would lower it" names


def size(n: int | None) -> str:
    """Bytes as ``576 B``, ``12.5 KiB``, ``3.06 MiB``, ``1.20 GiB``; ``?`` when unknown."""
    if n is None:
        return "?"
    if abs(n) >= 2**30:
        return f"{n / 2**30:.2f} GiB"
    if abs(n) >= 2**20:
        return f"{n / 2**20:.2f} MiB"
    if abs(n) >= 1024:
        return f"{n / 1024:.1f} KiB"
    return f"{n} B"


def _share(part: int, whole: int) -> str:
    return f"{100 * part / whole:.0f} %" if whole else "-"


def tensor_text(t: MemoryTensor) -> str:
    """``alloc2 [1, 112, 112, 64] float32``."""
    shape = ", ".join(str(d) for d in t["shape"])
    return f"{t['var']} [{shape}] {t['dtype']}"


def _layer(t: MemoryTensor, label: Label) -> str:
    if t["layer"] is not None:
        return label(t["layer"])
    return ", ".join(label(lid) for lid in t["layers"][:2]) or "(no layer)"


def step_of(data: MemoryDocument, at: int | None) -> int | None:
    """The step ``--at`` names (default: the peak's)."""
    return data["peak"]["step"] if at is None else at


def breakdown(data: MemoryDocument, step: int) -> dict:
    """What is held during ``step``: each storage with its tensors alive then (largest
    first), storages held for no live tensor, the kernel's scratch."""
    s = data["steps"][step]
    storages, tensors = held_at(data, step)
    alive = {t["id"] for t in tensors}
    rows = []
    empty = []
    for st in sorted(storages, key=lambda st: -(st["bytes"] or 0)):
        inside = [data["tensors"][tid] for tid in st["tensors"] if tid in alive]
        if not inside:
            later = [data["tensors"][tid] for tid in st["tensors"] if (data["tensors"][tid]["first_step"] or 0) > step]
            empty.append({"storage": st["id"], "bytes": st["bytes"], "next": later[0]["id"] if later else None})
        rows.append({"storage": st["id"], "bytes": st["bytes"], "tensors": [t["id"] for t in inside]})
    ranked = sorted(tensors, key=lambda t: (-(t["bytes"] or 0), t["id"]))
    kernel = next((k for k in data["kernels"] if k["name"] == s["callee"]), None)
    return {
        "step": step,
        "callee": s["callee"],
        "kind": s["kind"],
        "layers": s["layers"],
        "total_bytes": s["total_bytes"],
        "live_bytes": s["live_bytes"],
        "scratch_bytes": s["scratch_bytes"],
        "stack_bytes": s["stack_bytes"],
        "unknown": s["unknown"],
        "storages": rows,
        "held_empty": empty,
        "tensors": [t["id"] for t in ranked],
        "scratch_buffers": [b for b in (kernel["buffers"] if kernel else []) if b["where"] == "heap"],
    }


def advice(data: MemoryDocument, step: int, label: Label) -> list[dict]:
    """What would lower the bytes held during ``step``, stated from the timeline: the tensors
    alive across it the longest (a distant consumer keeps them), the kernels whose scratch is
    a large part of it, storages the plan holds there for no live tensor."""
    s = data["steps"][step]
    total = s["total_bytes"]
    _, tensors = held_at(data, step)
    out = []
    spanning = [
        t for t in tensors if not t["output"] and (t["bytes"] or 0) > 0 and step not in (t["producer"], t["last_use"])
    ]
    spanning.sort(key=lambda t: (-t["steps_alive"], -(t["bytes"] or 0), t["id"]))
    for t in spanning[:MAX_ADVICE]:
        consumer = data["steps"][t["last_use"]] if t["last_use"] is not None else None
        by = f" by {', '.join(label(lid) for lid in consumer['layers'][:2])}" if consumer and consumer["layers"] else ""
        out.append(
            {
                "kind": "long_lived",
                "tensor": t["id"],
                "bytes": t["bytes"],
                "text": (
                    f"{tensor_text(t)} ({size(t['bytes'])}, {_share(t['bytes'] or 0, total)} of step {step}), the output of "
                    f"{_layer(t, label)}, is held from step {t['first_step']} to step {t['last_step']} "
                    f"({t['steps_alive']} steps) for its last read at step {t['last_use']}{by}; "
                    f"it is idle at step {step}: producing it later or reading it earlier (another order, "
                    f"or recomputing it) would free {size(t['bytes'])} here"
                ),
            }
        )
    kernels = sorted(
        (k for k in data["kernels"] if (k["workspace_bytes"] or 0) > 0), key=lambda k: -(k["workspace_bytes"] or 0)
    )
    own = next((k for k in kernels if k["name"] == s["callee"]), None)
    if own is not None and total and (own["workspace_bytes"] or 0) >= 0.1 * total:
        out.append(_scratch_advice(own, f"{_share(own['workspace_bytes'] or 0, total)} of step {step}", "at this step"))
    peak = data["peak"]["bytes"]
    for k in kernels:
        if k is own or len([a for a in out if a["kind"] == "scratch"]) >= MAX_ADVICE:
            continue
        if peak and (k["workspace_bytes"] or 0) >= 0.1 * peak:
            out.append(_scratch_advice(k, f"{_share(k['workspace_bytes'] or 0, peak)} of the peak", "when it runs"))
    for st in breakdown(data, step)["held_empty"]:
        nxt = data["tensors"][st["next"]] if st["next"] is not None else None
        why = (
            f"the plan keeps it for {tensor_text(nxt)} from step {nxt['first_step']}"
            if nxt
            else "no tensor of it is alive again"
        )
        out.append(
            {
                "kind": "held_empty",
                "storage": st["storage"],
                "bytes": st["bytes"],
                "text": f"storage #{st['storage']} ({size(st['bytes'])}) holds no live tensor at step {step}: {why}",
            }
        )
    return out


def _scratch_advice(k, share: str, when: str) -> dict:
    parts = ", ".join(f"{b['name']} {size(b['bytes'])}" for b in k["buffers"] if b["where"] == "heap")
    per_thread = " per thread" if k["per_thread"] else ""
    return {
        "kind": "scratch",
        "kernel": k["name"],
        "bytes": k["workspace_bytes"],
        "text": f"kernel {k['name']} allocates {size(k['workspace_bytes'])} of scratch{per_thread} {when} ({share}): {parts}",
    }


def reuse(data: MemoryDocument, label: Label) -> list[dict]:
    """Storages holding tensors of more than one layer, in turn (storage reuse)."""
    out = []
    for st in data["storages"]:
        if len(st["tensors"]) < 2:
            continue
        out.append(
            {
                "storage": st["id"],
                "bytes": st["bytes"],
                "tensors": st["tensors"],
                "layers": st["layers"],
                "text": f"storage #{st['id']} {size(st['bytes'])}: {len(st['tensors'])} tensors in turn, of "
                + ", ".join(label(lid) for lid in st["layers"][:6])
                + (f" and {len(st['layers']) - 6} more" if len(st["layers"]) > 6 else ""),
            }
        )
    return out


def check_lines(data: MemoryDocument, model_inputs: int | None) -> list[str]:
    """The static figures beside what a run measured, and the reference's arena."""
    m = data["measured"]
    p = data["predicted"]
    stated = tolerance_text(data)
    lines = []
    if p["workspace_pool_bytes"]:
        lines.append(
            f"  TVM's CPU workspace pool keeps the scratch pages it allocated ({size(p['workspace_pool_bytes'])} "
            f"here) from kernel to kernel: with its allocators the run should peak at {size(p['naive_peak_bytes'])} "
            f"(the 'replayed' column), the plan at {size(data['peak']['bytes'])}"
        )
    if m["status"] == "measured":
        verdict = {True: f"within {stated}", False: f"NOT within {stated}", None: ""}
        lines.append(
            f"  run, VM naive allocator: {size(m.get('naive_peak_bytes'))} measured at its peak, "
            f"{size(p['naive_peak_bytes'])} replayed: {verdict[m.get('naive_within')]}"
        )
        lines.append(
            f"  run, VM pooled allocator (TVM's default): {size(m.get('pooled_bytes'))} held, "
            f"{size(p['pooled_bytes'])} replayed: {verdict[m.get('pooled_within')]}"
        )
        lines.append(f"  (measured on {m.get('where') or 'this machine'}: {m.get('method')})")
    else:
        lines.append(f"  not measured: {m.get('reason') or m['status']}")
    ref = data.get("reference")
    if ref:
        if ref.get("error"):
            lines.append(f"  reference: {ref['error']}")
        else:
            tvm_side = data["peak"]["bytes"] + (model_inputs or 0)
            lines.append(
                f"  {ref.get('engine')}: arena {size(ref.get('arena_bytes'))} (inputs, activations, kernel "
                f"temporaries) beside TVM's peak + inputs {size(tvm_side)}"
            )
        micro = ref.get("micro")
        if micro and micro.get("error"):
            lines.append(f"  TFLite Micro: {micro['error']}")
        elif micro:
            lines.append(
                f"  {micro.get('engine')}: arena {size(micro.get('arena_bytes'))} "
                f"({size(micro.get('head_bytes'))} planned for tensors and scratch, "
                f"{size(micro.get('tail_bytes'))} persistent)"
            )
    return lines


def tolerance_text(data: MemoryDocument) -> str:
    """The stated tolerance: ``5 % + 256.0 KiB``."""
    tol = data["tolerance"]
    return f"{100 * tol['share']:.0f} % + {size(int(tol['bytes']))}"


def measured_caption(data: MemoryDocument) -> str:
    """One line for a picture of the timeline: where the run was measured, its peak beside the
    static one it is checked against and the verdict (the naive allocator's run, the one whose
    samples follow the plan; then the pooled one's figure) — or why nothing was measured."""
    m = data["measured"]
    if m["status"] != "measured":
        why = one_line(m.get("reason") or m["status"])
        hint = (
            "; tvm-explorer compile --profile (llvm or c) or tvm-explorer profile BUNDLE measures what a run allocates"
            if m["status"] == "not_requested"
            else ""
        )
        return f"not measured: {shown_name(why)}{hint}"
    p = data["predicted"]
    stated = tolerance_text(data)
    naive: dict[bool | None, str] = {
        True: f"within the tolerance of {stated}",
        False: f"NOT within the tolerance of {stated}",
        None: "not compared",
    }
    pooled: dict[bool | None, str] = {True: "within", False: "NOT within", None: "not compared"}
    static = size(p["naive_peak_bytes"])
    if p["workspace_pool_bytes"] and p["naive_peak_bytes"] != data["peak"]["bytes"]:
        static += f": the plan's {size(data['peak']['bytes'])} + pages TVM's workspace pool keeps"
    where = shown_name(one_line(m.get("where") or "this machine"))
    return (
        f"measured on {where}: peak {size(m.get('naive_peak_bytes'))} "
        f"(static {static}, {naive[m.get('naive_within')]}), VM naive allocator; "
        f"pooled (TVM's default): {size(m.get('pooled_bytes'))} held "
        f"(static {size(p['pooled_bytes'])}, {pooled[m.get('pooled_within')]})"
    )


def input_bytes(data: MemoryDocument) -> int | None:
    values = [r["bytes"] for r in data["inputs"]]
    return None if any(v is None for v in values) else sum(v for v in values if v is not None)


def _step_row(s: MemoryStep, label: Label, measured: list | None) -> str:
    layers = ", ".join(label(lid) for lid in s["layers"][:1]) + (
        f" +{len(s['layers']) - 1}" if len(s["layers"]) > 1 else ""
    )
    got = measured[s["index"]] if measured else None
    return (
        f"  {s['index']:>5}  {size(s['total_bytes']):>11}  {size(s['live_bytes']):>11}  "
        f"{size(s['scratch_bytes']) if s['scratch_bytes'] else '-':>10}  {size(s['runtime_bytes']):>11}  "
        f"{size(got) if got is not None else '-':>11}  {s['callee'][:40]:<40}  {layers}"
    )


def render(data: MemoryDocument, label: Label, at: int | None = None, top: int = 15, title: str = "") -> str:
    """The report as text: the step (default the peak) first, then the timeline."""
    out = []
    step = step_of(data, at)
    analysed = data["analysed"]
    read = f", read after {analysed['pass']}" if analysed.get("pass") else ""
    out.append(f"Memory of {title or 'the model'} (target {data.get('target')}), function {data['function']}{read}")
    for sym in data["symbols"]:
        how = {"tir_var_upper_bound": "its tir_var_upper_bound", "inputs": "the profiled run's input"}.get(
            sym["source"] or "", ""
        )
        value = (
            f"= {sym['value']} ({how})"
            if sym["value"] is not None
            else "has no bound: sizes depending on it are unknown"
        )
        out.append(f"  dynamic dimension {sym['name']} {value}")
    if step is None:
        out.append("  the function calls nothing: no timeline")
        return "\n".join(out)
    b = breakdown(data, step)
    total = b["total_bytes"]
    peak = data["peak"]
    what = "Peak" if step == peak["step"] else f"Step {step} (the peak is {size(peak['bytes'])} at step {peak['step']})"
    who = ", ".join(label(lid) for lid in b["layers"][:3]) + (" …" if len(b["layers"]) > 3 else "")
    out.append("")
    out.append(
        f"{what}: {size(total)} at step {step} of {len(data['steps'])}: {b['callee']}" + (f" ({who})" if who else "")
    )
    out.append(f"  held in storages  {size(b['live_bytes']):>11}  ({len(b['storages'])} storages)")
    out.append(
        f"  kernel scratch    {size(b['scratch_bytes']):>11}"
        + (f"  (+{size(b['stack_bytes'])} on the stack)" if b["stack_bytes"] else "")
    )
    if b["unknown"]:
        out.append(f"  and {b['unknown']} storages of unknown size (a symbolic dimension without a bound)")
    ins = input_bytes(data)
    out.append(
        f"  resident besides: inputs {size(ins)}, constants {size(data['constants']['bytes'])} "
        f"({data['constants']['count']})"
    )
    out.append("")
    out.append("Alive at this step, largest first:")
    out.append(f"  {'bytes':>11}  {'tensor':<40}  {'storage':>8}  {'steps alive':>12}  {'last read':>9}  layer")
    for tid in b["tensors"]:
        t = data["tensors"][tid]
        span = f"{t['first_step']}–{t['last_step'] if not t['to_end'] else 'end'}"
        last = "output" if t["output"] else ("-" if t["last_use"] is None else str(t["last_use"]))
        out.append(
            f"  {size(t['bytes']):>11}  {tensor_text(t)[:40]:<40}  {'#' + str(t['storage']):>8}  {span:>12}  {last:>9}  "
            f"{_layer(t, label)}"
        )
    for st in b["held_empty"]:
        out.append(f"  {size(st['bytes']):>11}  {'(no live tensor)':<40}  {'#' + str(st['storage']):>8}")
    if b["scratch_buffers"]:
        out.append(
            "  scratch of "
            + b["callee"]
            + ": "
            + ", ".join(f"{x['name']} {size(x['bytes'])}" for x in b["scratch_buffers"])
        )
    lower = advice(data, step, label)
    out.append("")
    out.append("What would lower it:")
    out.extend(f"  - {a['text']}" for a in lower)
    if not lower:
        out.append("  - every tensor alive here is read or written by this step or the next; nothing waits idle")
    shared = reuse(data, label)
    if shared:
        out.append("")
        out.append("Storage reuse (tensors placed in one storage in turn):")
        out.extend(f"  {r['text']}" for r in shared[:10])
        if len(shared) > 10:
            out.append(f"  … {len(shared) - 10} more (--json)")
    out.append("")
    out.append("Checked against reality:")
    out.extend(check_lines(data, ins))
    out.append("")
    out.append(
        f"Timeline, biggest steps first ({min(top, len(data['steps']))} of {len(data['steps'])}; --at STEP for one):"
    )
    out.append(
        f"  {'step':>5}  {'total':>11}  {'in storages':>11}  {'scratch':>10}  {'replayed':>11}  {'measured':>11}  "
        f"{'call':<40}  layers"
    )
    measured = data["measured"].get("steps")
    for s in sorted(data["steps"], key=lambda s: (-s["total_bytes"], s["index"]))[:top]:
        out.append(_step_row(s, label, measured))
    for note in data["notes"]:
        out.append(f"note: {note}")
    return "\n".join(out)


def as_json(data: MemoryDocument, label: Label, at: int | None = None) -> dict:
    """The documented JSON of ``tvm-explorer memory --json``: the step's breakdown and what
    would lower it, storage reuse, and the whole ``memory.json``."""
    step = step_of(data, at)
    return {
        "step": step,
        "breakdown": breakdown(data, step) if step is not None else None,
        "advice": advice(data, step, label) if step is not None else [],
        "reuse": reuse(data, label),
        "memory": data,
    }

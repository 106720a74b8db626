"""``tvm-explorer costs BUNDLE``: the per-layer table (and its JSON form)."""

from __future__ import annotations

from tvm_explorer.bundle.sections.costs import CostLayer, CostsDocument, clock_label, measured_on
from tvm_explorer.bundle.sections.sass import SassDocument
from tvm_explorer.bundle.sections.tuning import TuningDocument, layer_states
from tvm_explorer.tablenames import NameColumn

SORTS = ("time", "code", "memory")


def sort_layers(layers: list[CostLayer], by: str) -> list[CostLayer]:
    """Layers most expensive first: by measured time (by code lines when nothing was
    measured), code lines or workspace bytes; ties in model order."""
    if by == "time" and all(lay.get("time_ms") is None for lay in layers):
        by = "code"
    key = {
        "time": lambda lay: lay.get("time_ms") or 0.0,
        "code": lambda lay: lay.get("code_lines", 0),
        "memory": lambda lay: lay.get("workspace_bytes", 0),
    }[by]
    return sorted(layers, key=lambda lay: (-key(lay), lay["subgraph"], lay["op_index"]))


def as_json(
    costs: CostsDocument, by: str, machine: SassDocument | None = None, tuning: TuningDocument | None = None
) -> dict:
    """The documented JSON of ``tvm-explorer costs --json`` (with ``machine``, a bundle compiled
    with ``--sass``: its architecture and each kernel's machine facts)."""
    out: dict[str, object] = {
        "total_ms": costs.get("total_ms"),
        "profile": costs.get("profile"),
        "code_kind": costs.get("code_kind"),
        "layers": sort_layers(costs["layers"], by),
        "kernels": costs.get("kernels", []),
        "passes": costs.get("passes", []),
    }
    if machine is not None:
        out["machine"] = {"arch": machine["arch"], "layers": machine["layers"], "kernels": machine["kernels"]}
    if tuning is not None:
        out["tuning"] = {str(lid): text for lid, text in sorted(layer_tuning(tuning).items())}
    return out


def machine_columns(machine: SassDocument | None, layer_id: int | None) -> str:
    """A layer's registers (most of its kernels), spilled bytes, lowest occupancy and SASS
    instructions, as the table's columns (``--sass`` bundles)."""
    if machine is None:
        return ""
    row = machine["layers"].get(str(layer_id)) if layer_id is not None else None
    if not row:
        return f" {'-':>5} {'-':>6} {'-':>5} {'-':>7}"
    occupancy = row.get("min_occupancy")
    occ = f"{occupancy:.0%}" if occupancy is not None else "-"
    return f" {row.get('registers', 0):>5} {size(row.get('spilled', 0)):>6} {occ:>5} {row.get('instructions', 0):>7}"


def layer_tuning(tuning: TuningDocument | None) -> dict[int, str]:
    """Layer id -> what tuning did to its kernels, with the smallest speedup of its tuned ones
    (``tuned 1.80x``)."""
    if tuning is None:
        return {}
    return {lid: f"{word} {speedup:.2f}x" if speedup else word for lid, (word, speedup) in layer_states(tuning).items()}


def size(n: int) -> str:
    """Bytes as ``48 KiB``."""
    if n >= 2**20:
        return f"{n / 2**20:.1f} MiB"
    if n >= 1024:
        return f"{n / 1024:.0f} KiB"
    return f"{n} B"


def flops_text(n: float) -> str:
    """FLOPs as ``1.2 GFLOP``, ``103 MFLOP``, ``8.2 kFLOP``."""
    for unit, scale in (("GFLOP", 1e9), ("MFLOP", 1e6), ("kFLOP", 1e3)):
        if n >= scale:
            return f"{n / scale:.3g} {unit}"
    return f"{n:.0f} FLOP"


def lines_label(costs: CostsDocument) -> str:
    """What the code lines count: ``C lines``, ``CUDA lines``, ``LLVM IR lines``."""
    return {"c": "C lines", "cuda": "CUDA lines", "ll": "LLVM IR lines"}.get(costs.get("code_kind") or "", "lines")


def render(
    costs: CostsDocument,
    by: str,
    top_passes: int = 8,
    unit: str = "op",
    machine: SassDocument | None = None,
    tuning: TuningDocument | None = None,
) -> str:
    """The table as text (``unit``: what a layer is called, ``op`` or ``node``; ``machine``:
    the machine-code facts of a ``--sass`` bundle, as four more columns; ``tuning``: the ledger
    of a ``--tune`` bundle, as a column of what tuning did to each layer's kernels)."""
    tuned = layer_tuning(tuning)
    out = []
    profile = costs.get("profile") or {}
    total = costs.get("total_ms")
    if total is not None:
        plain = profile.get("plain_run_ms")
        extra = f"; a plain run took {plain:.3f} ms" if plain is not None else ""
        on = measured_on(profile)
        where = f" on {profile['device_name']}" if profile.get("device_name") and not on else ""
        out.append(
            f"Measured: {total:.3f} ms per run ({clock_label(profile)}{where}, median of "
            f"{profile.get('repeat')} runs, inputs {profile.get('inputs')}){extra}"
        )
        if on:
            out.append(f"  {on[0].upper()}{on[1:]}")
            for i, d in enumerate((profile.get("remote") or {}).get("devices") or []):
                totals = profile.get("device_total_ms") or []
                t = f": {totals[i]:.3f} ms per run" if i < len(totals) and totals[i] is not None else ""
                out.append(f"    device {d.get('address')}: {d.get('description')}{t}")
    else:
        out.append(f"Run time not measured: {profile.get('reason') or profile.get('status')}")
    nvtx = profile.get("nvtx")
    if nvtx and profile.get("device") == "cuda":
        out.append(
            f"  NVTX: each call of {nvtx['kernels']} kernels ran in a range named after its layers "
            f"(domain {nvtx['domain']}, {nvtx['library']}): profile with nsys --trace=cuda,nvtx"
            if nvtx.get("library")
            else f"  NVTX: no ranges, {nvtx.get('reason')}"
        )
    shared_note = False
    spreads: list[float] = []
    name_col = NameColumn((lay["name"] for lay in costs["layers"]), 40)
    if note := name_col.note():
        out.append(note)
    if machine is not None:
        out.append(
            f"Machine code for {machine['arch']} (--sass): regs = most registers per thread of the layer's "
            "kernels, spill = bytes spilled, occ = lowest occupancy, SASS = instructions"
        )
    extra = f" {'regs':>5} {'spill':>6} {'occ':>5} {'SASS':>7}" if machine is not None else ""
    extra += f" {'tuning':>13}" if tuning is not None else ""
    out.append(
        f"{'#':>3}  {'layer':<56} {'time ms':>9} {'share':>6} {lines_label(costs):>13} "
        f"{'workspace':>10} {'MFLOP':>9}{extra}  kernels"
    )
    for rank, lay in enumerate(sort_layers(costs["layers"], by), 1):
        where = f"{'sg ' + str(lay['subgraph']) + ' ' if lay['subgraph'] else ''}{unit} {lay['op_index']}"
        label = f"{where} {lay['opcode']}"
        label = f"{label} {name_col.show(lay['name'], max(8, 55 - len(label)))}"
        t = f"{lay['time_ms']:.3f}" if lay.get("time_ms") is not None else "-"
        spread = [v for v in lay.get("device_time_ms") or [] if v is not None]
        if len(spread) > 1:
            spreads.append(max(spread) - min(spread))
        share, flops = lay.get("share"), lay.get("flops")
        s = f"{100 * share:.1f}%" if share is not None else "-"
        fl = f"{flops / 1e6:.2f}" if flops is not None else "-"
        shared = set(lay.get("shared_kernels", []))
        shared_note = shared_note or bool(shared)
        names = ", ".join(n + ("*" if n in shared else "") for n in lay["kernels"]) or "-"
        out.append(
            f"{rank:>3}  {label[:56]:<56} {t:>9} {s:>6} {lay['code_lines']:>13} "
            f"{size(lay['workspace_bytes']):>10} {fl:>9}{machine_columns(machine, lay.get('id'))}"
            f"{(' ' + format(tuned.get(lay.get('id'), '-'), '>13')) if tuning is not None else ''}  {names}"
        )
    if total is not None:
        attributed = sum(lay["time_ms"] or 0.0 for lay in costs["layers"])
        out.append(
            f"     layers {attributed:.3f} ms, VM runtime (checks, allocations) "
            f"{profile.get('runtime_ms') or 0.0:.3f} ms"
        )
    if spreads:
        out.append(
            f"     across devices, a layer's time differs by up to {max(spreads):.3f} ms "
            "(tvm-explorer costs --json: each layer's device_time_ms)"
        )
    if shared_note:
        out.append(
            "  * shared kernel (serves several layers): its time is split by each layer's "
            "share of its work, never counted twice"
        )
    passes = [p for p in costs.get("passes", []) if p.get("ms") is not None]
    if passes:
        total_compile = sum(p["ms"] or 0.0 for p in passes)  # all set: filtered above
        out.append(f"\nCompile time: {total_compile / 1e3:.2f} s in {len(passes)} passes; slowest:")
        for p in sorted(passes, key=lambda p: -(p["ms"] or 0.0))[:top_passes]:
            out.append(
                f"  {p['index']:>4}  {p['name'][:40]:<40} {p['ms']:>9.1f} ms  "
                f"{p.get('changed_functions') or 0} functions changed"
            )
    return "\n".join(out)

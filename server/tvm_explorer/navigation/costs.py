"""Costs of a loaded bundle as the editor features ask for them: per layer, per kernel, and
short texts ("1.23 ms · 14 % · 312 C lines · 48 KiB"). Protocol-free."""

from __future__ import annotations

import re
import threading
import weakref
from typing import TypedDict

from tvm_explorer.bundle.reader import Bundle
from tvm_explorer.bundle.sections.costs import CostLayer, CostsDocument, clock_label, measured_on
from tvm_explorer.costs.rollup import ModuleCost, across_repeats, by_module, merge_repeats
from tvm_explorer.costs.table import flops_text, lines_label, size, sort_layers
from tvm_explorer.inert import markdown as md
from tvm_explorer.provenance.repeats import module_of
from tvm_explorer.tablenames import shorten

MODULE_LABEL_WIDTH = 28
"""Most characters of a module path as a Hot Layers row names it: with the figures after it,
what a side bar of VS Code's default width shows (a longer path loses its left end)."""


class CostIndex:
    """One bundle's ``costs.json``, indexed by layer id and kernel name."""

    def __init__(self, costs: CostsDocument):
        self.costs = costs
        self.by_layer = {lay["id"]: lay for lay in costs["layers"]}
        self.kernels = {k["name"]: k for k in costs["kernels"]}
        self.total_ms = costs.get("total_ms")
        self.measured = self.total_ms is not None
        self.lines = lines_label(costs)
        times = [k["time_ms"] or 0.0 for k in costs["kernels"]]
        lines = [k["code_lines"] for k in costs["kernels"]]
        self._max_time = max(times, default=0.0)
        self._max_lines = max(lines, default=0)

    def ranked(self) -> list[CostLayer]:
        """Layers by time (by code lines without a profile), most expensive first."""
        return sort_layers(self.costs["layers"], "time")

    def modules(self, depth: int | None) -> list[ModuleCost]:
        """Costs rolled up the module tree at ``depth``, repeated modules merged, most
        expensive first (the grouped Hot Layers view)."""
        return merge_repeats(by_module(self.costs["layers"], depth))

    def module_summary(self, row: ModuleCost) -> str:
        """``1.23 ms · 14 % · 312 C lines · 48 KiB · 8 layers``."""
        parts = []
        if row["time_ms"] is not None:
            parts.append(f"{row['time_ms']:.2f} ms")
            parts.append(f"{100 * (row['share'] or 0.0):.0f} %")
        parts.append(f"{row['code_lines']} {self.lines}")
        if row["workspace_bytes"]:
            parts.append(size(row["workspace_bytes"]))
        count = len(row["layers"])
        parts.append(f"{count} layer{'s' if count != 1 else ''}")
        return " · ".join(parts)

    def summary(self, lay: CostLayer) -> str:
        """``1.23 ms · 14 % · 312 C lines · 48 KiB`` (parts without a value left out)."""
        parts = []
        if lay.get("time_ms") is not None:
            parts.append(f"{lay['time_ms']:.2f} ms")
            parts.append(f"{100 * (lay.get('share') or 0.0):.0f} %")
        lines = lay["code_lines"]
        shared = lay.get("shared_code_lines", 0)
        if lines or not shared:
            parts.append(f"{lines} {self.lines}")
        else:
            parts.append(f"{shared} shared {self.lines}")
        if lay["workspace_bytes"]:
            parts.append(size(lay["workspace_bytes"]))
        return " · ".join(parts)

    def kernel_heat(self, name: str) -> float | None:
        """0..1: the kernel's time against the slowest kernel's (code lines without a
        profile); None for an unknown kernel."""
        k = self.kernels.get(name)
        if k is None:
            return None
        if self.measured and self._max_time > 0:
            return (k["time_ms"] or 0.0) / self._max_time
        return k["code_lines"] / self._max_lines if self._max_lines else 0.0

    def kernel_summary(self, name: str) -> str:
        """``fused_conv2d: 0.80 ms (9 %) in 2 calls · 24 C lines · 48 KiB · 1.2 MFLOP``."""
        k = self.kernels[name]
        parts = []
        if k.get("time_ms") is not None:
            share = f" ({100 * (k.get('share') or 0.0):.0f} %)" if k.get("share") is not None else ""
            parts.append(f"{k['time_ms']:.2f} ms{share} in {k['calls']} call{'s' if k['calls'] != 1 else ''}")
        parts.append(f"{k['code_lines']} {self.lines}")
        if k["workspace_bytes"]:
            parts.append(size(k["workspace_bytes"]))
        flops = k.get("flops")
        if flops:
            parts.append(flops_text(flops))
        layers = len(k["layers"])
        if layers > 1:
            parts.append(f"shared by {layers} layers")
        return " · ".join(parts)

    def status_text(self, quote=str) -> str:
        """How the times were measured, or why they were not (``quote``: what the profile's
        own words go through; Markdown: ``text``)."""
        profile = self.costs["profile"]
        if self.measured:
            on = measured_on(profile)
            where = f"{quote(on)}, " if on else ""
            return (
                f"{where}{clock_label(profile)}, median of {profile.get('repeat')} runs; "
                f"whole model {self.total_ms:.2f} ms"
            )
        return f"run time not measured: {quote(profile.get('reason') or profile.get('status'))}"


_INDEXES: weakref.WeakKeyDictionary[Bundle, CostIndex | None] = weakref.WeakKeyDictionary()
_LOCK = threading.Lock()


def cost_index(bundle: Bundle) -> CostIndex | None:
    """The bundle's cost index (built once, kept while the bundle lives), or None without
    (valid) costs."""
    with _LOCK:
        if bundle in _INDEXES:
            return _INDEXES[bundle]
    try:
        costs = bundle.costs()
    except Exception:  # noqa: BLE001 - a damaged costs.json is a listed problem already
        costs = None
    got = CostIndex(costs) if costs else None
    with _LOCK:
        return _INDEXES.setdefault(bundle, got)


def hover_lines(bundle: Bundle, layer_ids: list[int], kernel: str | None = None) -> list[str]:
    """Markdown lines for a hover: each origin layer's costs, and the kernel under the mouse."""
    idx = cost_index(bundle)
    if idx is None:
        return []
    out = []
    # Several layers (a fused or shared kernel): the kernel's line says what it costs; a line
    # per layer would bury the hover.
    for lid in layer_ids[:1] if len(layer_ids) == 1 else ():
        lay = idx.by_layer.get(lid)
        if lay is None:
            continue
        shared = lay.get("shared_kernels") or []
        note = (
            f" (kernel{'s' if len(shared) > 1 else ''} shared with other layers: time split by work)" if shared else ""
        )
        who = f"layer {lid} " if len(layer_ids) > 1 else ""
        count = lay.get("kernel_count", len(lay["kernels"]))
        flops = lay.get("flops")
        out.append(
            f"- **Cost** {who}{idx.summary(lay)}"
            + (f" · {flops_text(flops)}" if flops else "")
            + f" · {count} kernel{'s' if count != 1 else ''}{note}"
        )
    only = idx.by_layer.get(layer_ids[0]) if len(layer_ids) == 1 else None
    same = only is not None and (only.get("kernels") or []) == [kernel]
    if kernel and kernel in idx.kernels and not same:  # the layer's line already says it
        out.append(f"- **Kernel** {md.code(kernel)}: {idx.kernel_summary(kernel)}")
    if out:
        out[-1] += f" · _{idx.status_text(md.text)}_"
        out[0] = "\n" + out[0]  # a list of its own, after the origin lines
    return out


_HEADING = re.compile(r"^module (\S+)", re.M)


def module_lenses(bundle: Bundle, text: str) -> list[tuple[int, str]]:
    """``(offset, title)`` for the first heading of each module in a model document
    (``module m.model.layers.0.mlp (LlamaMLP)``): the costs of the module's own layers and,
    for a module of repeated blocks, of all its repeats (``all 32 repeats
    (m.model.layers.{0..31}.mlp): …``)."""
    idx = cost_index(bundle)
    if idx is None:
        return []
    rows = by_module(idx.costs["layers"], None)
    by_name = {r["module"]: r for r in rows}
    repeats = {m: merged for merged in across_repeats(rows) for m in merged["members"]}
    out, seen = [], set()
    for found in _HEADING.finditer(text):
        name = found.group(1)
        row = by_name.get(name)
        if name in seen or row is None:
            continue
        seen.add(name)
        title = f"module: {idx.module_summary(row)}"
        merged = repeats.get(name)
        if merged is not None:
            title += f" · all {len(merged['members'])} repeats ({merged['module']}): {idx.module_summary(merged)}"
        out.append((found.start(), title))
    return out


def kernel_of(ranges) -> str | None:
    """The kernel (PrimFunc) named by the innermost ``primfunc`` range among ``ranges``."""
    for rng in ranges:
        if rng.kind == "primfunc" and rng.key.startswith("prim:"):
            name = rng.key[len("prim:") :]
            return name[: -len("_kernel")] if name.endswith("_kernel") else name
    return None


class PassTimes(TypedDict):
    """A pass's compile time and the functions it changed (``costs.json`` ``passes``)."""

    ms: float | None
    changed_functions: int | None


def pass_times(bundle: Bundle) -> dict[int, PassTimes]:
    """Pass index -> ``{"ms", "changed_functions"}`` from the bundle's costs (empty without)."""
    idx = cost_index(bundle)
    if idx is None:
        return {}
    return {
        p["index"]: {"ms": p.get("ms"), "changed_functions": p.get("changed_functions")}
        for p in idx.costs.get("passes", ())
    }


def module_labels(names: list[str]) -> tuple[dict[str, str], str]:
    """Rows named by their module path (PyTorch, nn: ``m.model.layers.0.mlp.down_proj/mm_6``
    → ``layers.0.mlp.down_proj``): per name, its module path without the dotted scope most of
    them share (never a whole path), cut to ``MODULE_LABEL_WIDTH`` at a ``.`` where one fits
    (``….12.self_attn.q_proj``, as the CLI tables cut names); and that scope."""
    paths = {name: module_of(name) for name in names}
    distinct = sorted({p for p in paths.values() if p})
    scope = _shared_scope(distinct)
    out = {}
    for name, path in paths.items():
        if not path:
            continue
        shown = path[len(scope) :] if scope and path.startswith(scope) else path
        out[name] = shorten(shown, MODULE_LABEL_WIDTH)
    return out, scope


def _shared_scope(paths: list[str]) -> str:
    """The longest dotted prefix (ending in ``.``) that two thirds of ``paths`` (two at least)
    start with, not ending before a block's index."""
    counts: dict[str, int] = {}
    for path in paths:
        for i, ch in enumerate(path):
            if ch == ".":
                counts[path[: i + 1]] = counts.get(path[: i + 1], 0) + 1
    need = max(2, -(-2 * len(paths) // 3))
    scope = max((p for p, n in counts.items() if n >= need), key=len, default="")
    # Not up to a list of repeated blocks: "layers.0.mlp" keeps its "layers" (an index alone
    # says nothing).
    while scope and any(p.startswith(scope) and p[len(scope) :].split(".")[0].isdigit() for p in paths):
        scope = scope[: scope.rstrip(".").rfind(".") + 1]
    return scope

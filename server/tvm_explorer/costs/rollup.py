"""Costs rolled up the module tree (``tvm-explorer costs --by module[:DEPTH]``, the Hot Layers
view grouped): one row per module at a depth (per decoder layer, ``model.layers.3``), and the
modules that repeat across layers merged (per block kind, ``model.layers.{0..31}.self_attn``).
Every layer counts in exactly one row of each, so a column's rows add up to its layers' sum.
"""

from __future__ import annotations

from typing import TypedDict

from tvm_explorer.bundle.sections.costs import CostLayer, CostsDocument
from tvm_explorer.provenance.repeats import TOP_LEVEL, at_depth, group_repeated, module_of


class ModuleCost(TypedDict):
    """The costs of a module subtree (or of the same module in repeated layers)."""

    module: str  # ``model.layers.3`` / ``model.layers.{0..31}.self_attn`` / ``(top level)``
    members: list[str]  # the modules summed (one, or one per repeat)
    layers: list[int]  # layer ids, model order
    time_ms: float | None
    share: float | None
    code_lines: int
    workspace_bytes: int
    flops: float | None
    kernels: list[str]


def parse_by(text: str) -> tuple[str, int | None]:
    """``layer`` / ``module`` / ``module:3`` → ``(kind, depth)``; ValueError with the reason."""
    kind, _, depth = text.partition(":")
    if kind not in ("layer", "module"):
        raise ValueError(f"--by {text}: expected layer, module or module:DEPTH")
    if not depth:
        return kind, None
    if kind != "module" or not depth.isdigit() or int(depth) < 1:
        raise ValueError(f"--by {text}: DEPTH must be a whole number of 1 or more (module:3)")
    return kind, int(depth)


def _total(rows, key: str) -> float | None:
    present = [v for lay in rows if (v := lay.get(key)) is not None]
    return sum(present) if present else None


def _sum(module: str, members: list[str], rows, layer_ids) -> ModuleCost:
    """The sum of ``rows`` (cost layers, or module rows: the columns they share)."""
    return {
        "module": module,
        "members": members,
        "layers": sorted(layer_ids),
        "time_ms": _total(rows, "time_ms"),
        "share": _total(rows, "share"),
        "code_lines": sum(lay["code_lines"] for lay in rows),
        "workspace_bytes": sum(lay["workspace_bytes"] for lay in rows),
        "flops": _total(rows, "flops"),
        "kernels": list(dict.fromkeys(k for lay in rows for k in lay["kernels"])),
    }


def sort_modules(rows: list[ModuleCost]) -> list[ModuleCost]:
    """Most expensive first: by time when measured, else by code lines; ties by name."""
    measured = any(r["time_ms"] is not None for r in rows)
    return sorted(
        rows, key=lambda r: (-((r["time_ms"] or 0.0) if measured else r["code_lines"]), min(r["layers"] or [0]))
    )


def by_module(layers: list[CostLayer], depth: int | None = None) -> list[ModuleCost]:
    """One row per module subtree cut at ``depth`` dotted parts (whole paths for None), most
    expensive first; layers outside every module in one ``(top level)`` row."""
    groups: dict[str, list[CostLayer]] = {}
    for lay in layers:
        module = at_depth(module_of(lay.get("name", "")), depth) or TOP_LEVEL
        groups.setdefault(module, []).append(lay)
    return sort_modules([_sum(module, [module], rows, [lay["id"] for lay in rows]) for module, rows in groups.items()])


def _path_order(path: str) -> tuple:
    """A module path's sort key with its numeric parts as numbers."""
    return tuple((0, int(p), "") if p.isdigit() else (1, 0, p) for p in path.split("."))


def across_repeats(rows: list[ModuleCost]) -> list[ModuleCost]:
    """The rows of ``by_module`` whose modules differ only in a layer index, merged
    (``model.layers.{0..31}.self_attn``: one block kind over every decoder layer); only the
    merged ones (a module that does not repeat is its own row already)."""
    out = []
    for module, at in group_repeated([r["module"] for r in rows]):
        if len(at) < 2:
            continue
        # in layer order (layers.0, layers.1, …, layers.10), whatever their costs' order
        members = sorted((rows[i] for i in at), key=lambda r: _path_order(r["module"]))
        out.append(_sum(module, [r["module"] for r in members], members, [lid for r in members for lid in r["layers"]]))
    return sort_modules(out)


def as_json(layers: list[CostLayer], depth: int | None) -> dict:
    """The ``modules`` and ``repeated`` rows of ``costs --by module[:DEPTH] --json``."""
    rows = by_module(layers, depth)
    return {"by": "module", "depth": depth, "modules": rows, "repeated": across_repeats(rows)}


def render(costs: CostsDocument, depth: int | None) -> str:
    """The rollup as text: the modules at ``depth``, then the modules repeated across layers."""
    from tvm_explorer.costs.table import lines_label, size

    rows = by_module(costs["layers"], depth)
    total = costs.get("total_ms")
    head = "Measured" if total is not None else "Not profiled (ranked by generated code size)"
    cut = f"cut at depth {depth}" if depth is not None else "whole module paths"
    out = [f"{head}: costs rolled up the module tree ({cut}); every layer counts once per table"]

    def table(title: str, items: list[ModuleCost]) -> None:
        out.append(f"\n{title}")
        out.append(
            f"{'#':>3}  {'module':<52} {'layers':>6} {'time ms':>9} {'share':>6} "
            f"{lines_label(costs):>13} {'workspace':>10} {'MFLOP':>9}"
        )
        for rank, r in enumerate(items, 1):
            t = f"{r['time_ms']:.3f}" if r["time_ms"] is not None else "-"
            s = f"{100 * r['share']:.1f}%" if r["share"] is not None else "-"
            fl = f"{r['flops'] / 1e6:.2f}" if r["flops"] is not None else "-"
            name = r["module"] if len(r["module"]) <= 52 else "…" + r["module"][-51:]
            out.append(
                f"{rank:>3}  {name:<52} {len(r['layers']):>6} {t:>9} {s:>6} {r['code_lines']:>13} "
                f"{size(r['workspace_bytes']):>10} {fl:>9}"
            )

    table("By module:", rows)
    repeated = across_repeats(rows)
    if repeated:
        table("Across repeated layers (the same module in every layer, summed):", repeated)
    return "\n".join(out)


def merge_repeats(rows: list[ModuleCost]) -> list[ModuleCost]:
    """``rows`` with the modules repeated across layers replaced by one merged row each (the
    grouped Hot Layers view: ``model.layers.{0..31}.mlp.down_proj`` once), most expensive first."""
    merged = across_repeats(rows)
    inside = {m for row in merged for m in row["members"]}
    return sort_modules([r for r in rows if r["module"] not in inside] + merged)

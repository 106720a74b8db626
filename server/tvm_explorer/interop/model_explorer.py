"""A bundle's per-layer figures as Model Explorer node data (its ``ModelNodeData`` JSON).

One overlay per figure: measured time, generated code, workspace, numerical error and the
divergence verdict. Each is ``{graph id: GraphNodeData}``, its ``results`` keyed by the node ids
Model Explorer's own adapter gives the original model file; the compile recorded those ids
per layer (``Layer.explorer_key``, written by each frontend's loader). Several layers of one
Model Explorer node (a PyTorch ``linear`` decomposed into ``permute`` + ``addmm``) are added up
(time, code), their kernels' workspace counted once, the largest error kept. A layer without
the figure (not timed, hidden inside a fused kernel) is left out, never written as zero.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field

from tvm_explorer.bundle.reader import Bundle
from tvm_explorer.bundle.sections.costs import CostLayer, CostsDocument, clock_label
from tvm_explorer.bundle.sections.numerics import NumericsDocument, NumericsLayer
from tvm_explorer.bundle.types import Layer
from tvm_explorer.costs.table import lines_label

Key = tuple[str, str]  # (graph id, node id)

# Sequential color scales (ColorBrewer), light for the smallest value, dark for the largest:
# one hue per figure, so two overlays side by side are not mistaken for each other. Model
# Explorer interpolates a gradient between its stops (0: the smallest value, 1: the largest).
_TIME_GRADIENT = [
    {"stop": 0, "bgColor": "#fff5eb"},
    {"stop": 0.5, "bgColor": "#fdae6b"},
    {"stop": 1, "bgColor": "#e6550d"},
]
_CODE_GRADIENT = [
    {"stop": 0, "bgColor": "#f2f0f7"},
    {"stop": 0.5, "bgColor": "#bcbddc"},
    {"stop": 1, "bgColor": "#807dba"},
]
_WORKSPACE_GRADIENT = [
    {"stop": 0, "bgColor": "#edf8e9"},
    {"stop": 0.5, "bgColor": "#a1d99b"},
    {"stop": 1, "bgColor": "#41ab5d"},
]
# Errors span decades (0, 1e-7, 0.5): a gradient would paint all but the worst layer white.
# Thresholds are upper bounds, in order; the last one catches everything above.
_ERROR_THRESHOLDS = [
    {"value": 1e-6, "bgColor": "#c7e9c0"},
    {"value": 1e-4, "bgColor": "#fff7bc"},
    {"value": 1e-2, "bgColor": "#fdae6b"},
    {"value": sys.float_info.max, "bgColor": "#de2d26", "textColor": "#ffffff"},
]
_VERDICT_THRESHOLDS = [
    {"value": 0, "bgColor": "#a1d99b"},
    {"value": 1, "bgColor": "#de2d26", "textColor": "#ffffff"},
]


@dataclass
class Overlay:
    """One node-data file: its name, title (units included) and values per node."""

    file: str
    title: str
    about: str  # one line for the README: what the numbers are
    values: dict[Key, float]
    gradient: list[dict] = field(default_factory=list)
    thresholds: list[dict] = field(default_factory=list)
    reference: str = ""  # the one string in ``about`` taken from the bundle (numerics' reference)

    def node_data(self) -> dict:
        """The ``ModelNodeData`` JSON: ``{graph id: GraphNodeData}``."""
        graphs: dict[str, dict] = {}
        for (graph, node), value in self.values.items():
            graphs.setdefault(graph, {})[node] = {"value": value}
        # Every field Model Explorer's ``GraphNodeData`` writes (its defaults included), so the
        # file is what its own ``to_json_string`` makes of the same data.
        return {
            graph: {
                "results": results,
                "name": self.title,
                "thresholds": self.thresholds,
                "gradient": self.gradient,
                "hideInAggregatedStatsTable": False,
                "hideInChildrenStatsTable": False,
                "showExpandedSummaryOnGroupNode": False,
                "showLabelCountColumnsInChildrenStatsTable": False,
            }
            for graph, results in graphs.items()
        }


@dataclass(frozen=True)
class Skipped:
    """An overlay not written, and why."""

    file: str
    reason: str


@dataclass
class Overlays:
    """What ``build_overlays`` made of a bundle."""

    written: list[Overlay]
    skipped: list[Skipped]
    unkeyed: list[Layer]  # layers Model Explorer shows no node for (their figures left out)


TIME_FILE = "time_ms.json"
CODE_FILE = "code_lines.json"
WORKSPACE_FILE = "workspace_kib.json"
ERROR_FILE = "error_max_abs.json"
VERDICT_FILE = "diverges.json"


def build_overlays(
    bundle: Bundle,
    costs: CostsDocument | None,
    numerics: NumericsDocument | None,
    costs_problem: str | None = None,
    numerics_problem: str | None = None,
) -> Overlays:
    """Every overlay the bundle has figures for, and why each other one is skipped (a section
    that is absent, or damaged: ``*_problem`` says how)."""
    groups: dict[int, Key] = {lay.id: lay.explorer_key for lay in bundle.layers if lay.explorer_key is not None}
    unkeyed = [lay for lay in bundle.layers if lay.explorer_key is None]
    written: list[Overlay] = []
    skipped: list[Skipped] = []
    if costs is None:
        reason = costs_problem or "the bundle has no costs.json (compiled before costs were recorded: recompile it)"
        skipped += [Skipped(name, reason) for name in (TIME_FILE, CODE_FILE, WORKSPACE_FILE)]
    else:
        _cost_overlays(costs, groups, written, skipped)
    if numerics is None:
        reason = numerics_problem or "the bundle has no numerics.json (compile with --numerics)"
        skipped += [Skipped(name, reason) for name in (ERROR_FILE, VERDICT_FILE)]
    else:
        _numerics_overlays(bundle, numerics, groups, written, skipped)
    return Overlays(written, skipped, unkeyed)


def _by_key(layers: list[CostLayer], groups: dict[int, Key]) -> dict[Key, list[CostLayer]]:
    out: dict[Key, list[CostLayer]] = {}
    for lay in layers:
        key = groups.get(lay["id"])
        if key is not None:
            out.setdefault(key, []).append(lay)
    return out


def _cost_overlays(costs: CostsDocument, groups: dict[int, Key], written: list, skipped: list) -> None:
    by_key = _by_key(costs["layers"], groups)
    profile = costs["profile"]
    if costs.get("total_ms") is None:
        why = profile.get("reason") or profile.get("status")
        hint = " (compile with --profile)" if profile.get("status") == "not_requested" else ""
        skipped.append(Skipped(TIME_FILE, f"run time was not measured: {why}{hint}"))
    else:
        times = {
            key: _total(lay["time_ms"] for lay in lays if lay.get("time_ms") is not None)
            for key, lays in by_key.items()
            if any(lay.get("time_ms") is not None for lay in lays)
        }
        how = f"{clock_label(profile)}, median of {profile.get('repeat')} runs"
        written.append(
            Overlay(
                TIME_FILE,
                f"TVM time (ms, {how})",
                f"measured time per node in milliseconds ({how}; a kernel shared by several "
                "layers split by their work); whole model "
                f"{costs['total_ms']:.3f} ms",
                times,
                gradient=_TIME_GRADIENT,
            )
        )
    label = lines_label(costs)
    code = {key: _total(lay["code_lines"] for lay in lays) for key, lays in by_key.items()}
    written.append(
        Overlay(
            CODE_FILE,
            f"TVM code ({label})",
            f"generated {label} attributed to the node (a line several layers share counts once, "
            "for the first of them)",
            code,
            gradient=_CODE_GRADIENT,
        )
    )
    if not any(lay["workspace_bytes"] for lay in costs["layers"]):
        skipped.append(Skipped(WORKSPACE_FILE, "no kernel of this model allocates a workspace"))
        return
    kernels = {k["name"]: k["workspace_bytes"] for k in costs["kernels"]}
    workspace = {key: _workspace(lays, kernels) / 1024 for key, lays in by_key.items()}
    written.append(
        Overlay(
            WORKSPACE_FILE,
            "TVM workspace (KiB)",
            "workspace memory the node's kernels allocate, in KiB (a fused kernel's for every layer in it)",
            workspace,
            gradient=_WORKSPACE_GRADIENT,
        )
    )


def _workspace(lays: list[CostLayer], kernels: dict[str, int]) -> int:
    """One layer's workspace; several layers' kernels counted once each."""
    if len(lays) == 1:
        return lays[0]["workspace_bytes"]
    names = {name for lay in lays for name in lay["kernels"]}
    return sum(kernels.get(name, 0) for name in names)


def _total(values) -> float:
    return round(sum(values), 6)


def _numerics_overlays(
    bundle: Bundle, numerics: NumericsDocument, groups: dict[int, Key], written: list, skipped: list
) -> None:
    entries: dict[Key, list[NumericsLayer]] = {}
    for entry in numerics["layers"]:
        layer = bundle.layer(entry["subgraph"], entry["op_index"])
        key = groups.get(layer.id) if layer is not None else None
        if key is not None and entry["observed"]:
            entries.setdefault(key, []).append(entry)
    reference = numerics["reference"]
    if not entries:
        skipped += [
            Skipped(name, "no layer's output was observed (compile with --numerics-unfused to see fused layers)")
            for name in (ERROR_FILE, VERDICT_FILE)
        ]
        return
    # ``max_abs`` null: infinite (or NaN) — no number to write; the verdict file shows it.
    errors: dict[Key, float] = {}
    for key, got in entries.items():
        finite = [e.get("max_abs") for e in got]
        if all(x is not None for x in finite):
            errors[key] = max(float(x or 0.0) for x in finite)
    written.append(
        Overlay(
            ERROR_FILE,
            f"TVM max abs error vs {reference}",
            f"largest absolute difference of the node's output from the {reference} "
            f"({numerics['mode']} build; nodes whose output a fused kernel hides are left out)",
            errors,
            thresholds=_ERROR_THRESHOLDS,
            reference=reference,
        )
    )
    verdicts: dict[Key, float] = {key: 1 if any(e["diverges"] for e in got) else 0 for key, got in entries.items()}
    written.append(
        Overlay(
            VERDICT_FILE,
            f"TVM diverges from {reference} (1 = yes)",
            f"1 where the node's output diverges from the {reference} beyond the thresholds of "
            "docs/numerics.md, 0 where it matches",
            verdicts,
            thresholds=_VERDICT_THRESHOLDS,
            reference=reference,
        )
    )

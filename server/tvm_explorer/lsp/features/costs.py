"""Costs in the editor: a code lens with each model layer's costs, ``tvmExplorer/costs``
(ranked layers for the Hot Layers view) and ``tvmExplorer/kernelHeat`` (a heat mark per
kernel of a TIR or generated-code document)."""

from __future__ import annotations

from lsprotocol import types

from tvm_explorer.bundle.index import Range
from tvm_explorer.costs.rollup import parse_by
from tvm_explorer.lsp.protocol import (
    SHOW_REFERENCES_COMMAND,
    CostsParams,
    CostsResult,
    HeatMark,
    KernelHeatResult,
    KernelStartResult,
    LayerCostInfo,
)
from tvm_explorer.lsp.shared import Feature, Session
from tvm_explorer.navigation.costs import CostIndex, cost_index, module_labels, module_lenses
from tvm_explorer.navigation.provenance import reach
from tvm_explorer.navigation.view import BundleView


def cost_lenses(session: Session, view: BundleView, path: str, uri: str) -> list[types.CodeLens]:
    """One lens per model layer with its costs (``1.23 ms · 14 % · 312 C lines · 48 KiB``)."""
    idx = cost_index(view.bundle)
    if idx is None:
        return []
    out = []
    for layer_reach in reach(view):
        lay = idx.by_layer.get(layer_reach.layer.id)
        rng = session.range(view, path, layer_reach.entry.start, layer_reach.entry.start)
        if lay is None or rng is None:
            continue
        title = idx.summary(lay)
        if lay.get("shared_kernels"):
            title += " · shared kernel"
        out.append(
            types.CodeLens(
                range=types.Range(rng.start, rng.start),
                command=types.Command(
                    title=title,
                    command=SHOW_REFERENCES_COMMAND,
                    arguments=[uri, {"line": rng.start.line, "character": rng.start.character}],
                ),
            )
        )
    return out


def module_cost_lenses(session: Session, view: BundleView, path: str) -> list[types.CodeLens]:
    """On the first heading of each module of the model document: the module's costs and,
    for repeated blocks, those of all its repeats (plain text: nothing to open)."""
    out = []
    for offset, title in module_lenses(view.bundle, view.bundle.text(path)):
        rng = session.range(view, path, offset, offset)
        if rng is not None:
            out.append(
                types.CodeLens(range=types.Range(rng.start, rng.start), command=types.Command(title=title, command=""))
            )
    return out


class CostRequests(Feature):
    """``tvmExplorer/costs`` and ``tvmExplorer/kernelHeat`` (docs/lsp-protocol.md)."""

    def _view(self, uri: str) -> BundleView | None:
        return self.session.bundle_view(uri)

    def costs(self, params: CostsParams | None) -> CostsResult:
        """A bundle's layers, most expensive first, each with its model-document location."""
        view = self._view(params.bundle) if params else None
        idx = cost_index(view.bundle) if view is not None else None
        if view is None or idx is None:
            problem = view.bundle.section_problems.get("costs.json") if view is not None else None
            return CostsResult(
                measured=False,
                total_ms=None,
                status="damaged" if problem else "none",
                reason=str(problem) if problem else "no costs recorded (recompile the bundle)",
                layers=[],
                note=str(problem) if problem else "",
            )
        profile = idx.costs["profile"]
        try:
            by, depth = parse_by(params.group if params else "layer")
        except ValueError as err:
            by, depth, grouping = "layer", None, f"{err}; "
        else:
            grouping = ""
        if by == "module":
            return CostsResult(
                measured=idx.measured,
                total_ms=idx.total_ms,
                status=str(profile.get("status", "")),
                reason=profile.get("reason"),
                layers=self._module_rows(view, idx, depth),
                lines=idx.lines,
                note=idx.status_text(),
                group=params.group if params else "layer",
            )
        layers = []
        ranked = idx.ranked()
        # PyTorch and nn layers are named by their module path first (the graph node's name,
        # mm_16, tells no one where it is); the scope they share is said once, in the note.
        modular = [
            lay["name"]
            for lay in ranked
            if lay["id"] < len(view.bundle.layers) and view.bundle.layers[lay["id"]].module_class
        ]
        labels, scope = module_labels(modular)
        for rank, lay in enumerate(ranked, 1):
            entries = view.layer_map.model_places.get(lay["id"])
            label = labels.get(lay["name"], "") if lay["name"] in modular else ""
            layers.append(
                LayerCostInfo(
                    rank=rank,
                    id=lay["id"],
                    subgraph=lay["subgraph"],
                    op_index=lay["op_index"],
                    opcode=lay["opcode"],
                    name=lay["name"],
                    time_ms=lay.get("time_ms"),
                    share=lay.get("share"),
                    code_lines=lay["code_lines"],
                    workspace_bytes=lay["workspace_bytes"],
                    kernels=list(lay["kernels"]),
                    shared_kernels=list(lay.get("shared_kernels") or []),
                    summary=idx.summary(lay),
                    location=self.session.location(view, entries[0]) if entries else None,
                    label=label,
                    node=lay["name"].rpartition("/")[2] if label else "",
                )
            )
        return CostsResult(
            measured=idx.measured,
            total_ms=idx.total_ms,
            status=str(profile.get("status", "")),
            reason=profile.get("reason"),
            layers=layers,
            lines=idx.lines,
            note=grouping + idx.status_text(),
            scope=scope if labels else "",
        )

    def _module_rows(self, view: BundleView, idx: CostIndex, depth: int | None) -> list[LayerCostInfo]:
        """One row per module (repeated modules merged), located at its first layer."""
        out = []
        for rank, row in enumerate(idx.modules(depth), 1):
            first = min(row["layers"])
            lay = view.bundle.layers[first]
            entries = view.layer_map.model_places.get(first)
            out.append(
                LayerCostInfo(
                    rank=rank,
                    id=first,
                    subgraph=lay.subgraph,
                    op_index=lay.op_index,
                    opcode="module",
                    name=row["module"],
                    time_ms=row["time_ms"],
                    share=row["share"],
                    code_lines=row["code_lines"],
                    workspace_bytes=row["workspace_bytes"],
                    kernels=row["kernels"],
                    shared_kernels=[],
                    summary=idx.module_summary(row),
                    location=self.session.location(view, entries[0]) if entries else None,
                    layer_ids=row["layers"],
                    members=row["members"],
                )
            )
        return out

    def kernel_start(self, params: types.TextDocumentIdentifier | None) -> KernelStartResult | None:
        """Where a generated-code document opens (a freshly compiled bundle): its hottest kernel
        when the bundle was profiled, else its first; in C at the kernel's first loop, past the
        argument checks. None: no costs, or none of their kernels is defined in the document."""
        found = self.session.locate(params.uri) if params is not None else None
        if found is None:
            return None
        view, path = found
        doc = view.bundle.document(path)
        idx = cost_index(view.bundle)
        if idx is None or doc is None or doc.stage != "code":
            return None
        ranges = view.bundle.index(path).ranges
        defined: dict[str, Range] = {}  # kernel -> its first definition in the document
        for rng in ranges:
            if rng.kind == "primfunc" and rng.key.startswith("prim:"):
                name = rng.key[len("prim:") :]
                kernel = name[: -len("_kernel")] if path.endswith(".cu") and name.endswith("_kernel") else name
                if kernel in idx.kernels and kernel not in defined:
                    defined[kernel] = rng
        if not defined:
            return None
        timed = {k: idx.kernels[k]["time_ms"] for k in defined if idx.kernels[k].get("time_ms") is not None}
        profiled = idx.measured and bool(timed)
        kernel = max(timed, key=lambda k: timed[k] or 0.0) if profiled else min(defined, key=lambda k: defined[k].start)
        rng = defined[kernel]
        start = rng.start
        if path.endswith(".c"):
            loops = [r.start for r in ranges if r.kind == "loop" and rng.start <= r.start < rng.end]
            start = min(loops, default=start)
        where = self.session.range(view, path, start, start)
        if where is None:
            return None
        return KernelStartResult(kernel=kernel, range=where, profiled=profiled)

    def kernel_heat(self, params: types.TextDocumentIdentifier | None) -> KernelHeatResult:
        """Per kernel defined in a TIR or code document: its range and heat (0..1)."""
        if params is None:
            return KernelHeatResult([])
        found = self.session.locate(params.uri)
        if found is None:
            return KernelHeatResult([])
        view, path = found
        doc = view.bundle.document(path)
        idx = cost_index(view.bundle)
        if idx is None or doc is None or doc.stage not in ("tir", "code"):
            return KernelHeatResult([])
        marks = []
        for rng in view.bundle.index(path).ranges:
            if rng.kind != "primfunc" or not rng.key.startswith("prim:"):
                continue
            name = rng.key[len("prim:") :]
            kernel = name[: -len("_kernel")] if name.endswith("_kernel") else name
            heat = idx.kernel_heat(kernel)
            where = self.session.range(view, path, rng.start, rng.end)
            if heat is None or where is None:
                continue
            marks.append(HeatMark(range=where, kernel=kernel, heat=round(heat, 4), label=idx.kernel_summary(kernel)))
        return KernelHeatResult(marks)

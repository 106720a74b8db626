"""Numerics in the editor: ``tvmExplorer/numerics`` (the Numerics view) and warnings on the
divergent layers of the model document (standard ``textDocument/publishDiagnostics``)."""

from __future__ import annotations

from lsprotocol import types

from tvm_explorer.bundle.sections.numerics import budget_lines, format_error, headline
from tvm_explorer.lsp.protocol import ListPassesParams, NumericsLayer, NumericsResult
from tvm_explorer.lsp.shared import Session
from tvm_explorer.navigation.numerics import divergence_warnings, numerics_rows
from tvm_explorer.navigation.view import BundleView

SOURCE = "tvm-explorer numerics"


class Numerics:
    """Answers ``tvmExplorer/numerics`` and publishes divergence warnings per bundle."""

    def __init__(self, server, session: Session):
        self.server = server
        self.session = session

    def numerics(self, params: ListPassesParams | None) -> NumericsResult:
        """The layers of a bundle's ``numerics.json`` in graph order (empty if none)."""
        view = self._bundle(params.bundle) if params else None
        data = view.bundle.numerics if view is not None else None
        if view is None or not data:
            problem = view.bundle.section_problems.get("numerics.json") if view is not None else None
            return NumericsResult(problem=str(problem) if problem else "")
        layers = []
        for row in numerics_rows(view):
            e = row.entry
            spread = e.get("spread") or None
            layers.append(
                NumericsLayer(
                    subgraph=e["subgraph"],
                    op_index=e["op_index"],
                    opcode=e["opcode"],
                    name=e["name"],
                    observed=e["observed"],
                    observed_by=e.get("observed_by"),
                    diverges=e["diverges"],
                    first=row.first,
                    summary=format_error(e),
                    max_abs=e.get("max_abs"),
                    max_rel=e.get("max_rel"),
                    cosine=e.get("cosine"),
                    steps=e.get("steps"),
                    location=self.session.location(view, row.place) if row.place else None,
                    hint=row.hint,
                    step_budget=e.get("step_budget"),
                    spread_steps=spread["steps"] if spread else None,
                    spread_cosine=spread["cosine"] if spread else None,
                    judged=e.get("judged", True),
                )
            )
        return NumericsResult(
            reference=data["reference"],
            mode=data["mode"],
            inputs=str(data.get("inputs", "")),
            first_divergence=dict(first) if (first := data.get("first_divergence")) is not None else None,
            layers=layers,
            headline=headline(data),
            budgets=budget_lines(data),
        )

    def publish(self, view) -> None:
        """Warnings on the model document's divergent layers (none clears earlier ones)."""
        diagnostics = []
        for place, message in divergence_warnings(view):
            rng = self.session.range(view, place.path, place.start, place.end)
            if rng is None:
                continue
            diagnostics.append(
                types.Diagnostic(range=rng, message=message, source=SOURCE, severity=types.DiagnosticSeverity.Warning)
            )
        model = view.model_path  # model.tflgraph, model.onnxgraph or model.fxgraph
        if view.bundle.document(model) is None:
            return
        self.server.text_document_publish_diagnostics(
            types.PublishDiagnosticsParams(uri=self.session.uri(view, model), diagnostics=diagnostics)
        )

    def _bundle(self, uri: str) -> BundleView | None:
        return self.session.bundle_view(uri)

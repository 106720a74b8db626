"""``textDocument/codeLens``: on each model layer, how many places it ended up in."""

from __future__ import annotations

from lsprotocol import types

from tvm_explorer.lsp.features.costs import cost_lenses, module_cost_lenses
from tvm_explorer.lsp.protocol import SHOW_LAYER_HISTORY_COMMAND, SHOW_REFERENCES_COMMAND
from tvm_explorer.lsp.shared import Feature
from tvm_explorer.navigation.places import lens_summary
from tvm_explorer.navigation.provenance import reach


class CodeLenses(Feature):
    """ "4 places in generated code · 9 in IR" and "Pass history" above every layer of the
    model document."""

    def code_lenses(self, params: types.CodeLensParams) -> list[types.CodeLens]:
        """One lens per layer entry; its command asks the client to show the references."""
        found = self.session.locate(params.text_document.uri)
        if found is None:
            return []
        view, path = found
        doc = view.bundle.document(path)
        if doc is None or doc.stage != "model":
            return []
        out = []
        for layer_reach in reach(view):
            entry = layer_reach.entry
            rng = self.session.range(view, path, entry.start, entry.start)
            if rng is None:
                continue
            at = [params.text_document.uri, {"line": rng.start.line, "character": rng.start.character}]
            out.append(
                types.CodeLens(
                    range=types.Range(rng.start, rng.start),
                    command=types.Command(
                        title=lens_summary(view, layer_reach.layer.id), command=SHOW_REFERENCES_COMMAND, arguments=at
                    ),
                )
            )
            # Its history is computed when asked for (a lens per layer must stay cheap).
            out.append(
                types.CodeLens(
                    range=types.Range(rng.start, rng.start),
                    command=types.Command(title="Pass history", command=SHOW_LAYER_HISTORY_COMMAND, arguments=at),
                )
            )
        out.extend(cost_lenses(self.session, view, path, params.text_document.uri))
        out.extend(module_cost_lenses(self.session, view, path))
        return out

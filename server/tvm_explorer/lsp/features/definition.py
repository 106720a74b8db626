"""``textDocument/definition``: on a use of a name, its definition in the same document;
anywhere else, the origin layer(s) of a position in the model document."""

from __future__ import annotations

from lsprotocol import types

from tvm_explorer.lsp.features.sources import source_locations
from tvm_explorer.lsp.shared import Feature, OffLoop
from tvm_explorer.navigation import provenance
from tvm_explorer.navigation.irsymbols.navigate import symbol_definition
from tvm_explorer.navigation.sources import source_refs, stack_refs


class Definition(Feature):
    """Go to the model layer(s) a piece of IR or code came from, and their source lines."""

    def definition(self, params: types.DefinitionParams) -> list[types.Location] | OffLoop:
        """A use of a name: its definition (producers first for a read); elsewhere one
        location per origin layer; a tensor name in the model goes to its producer."""
        q = self.session.query(params.text_document.uri, params.position)
        if q is None:
            return []
        places = symbol_definition(q.view, q.path, q.offset, q.keep)
        if places is not None:
            return self.session.locations(q.view, places)
        places = provenance.definition(q.view, q.path, q.offset, q.keep)
        found = self.session.locations(q.view, places)
        innermost = source_refs(q.view, q.path, q.offset, q.keep)
        if not innermost:
            return found
        callers = stack_refs(q.view, q.path, q.offset, q.keep)[len(innermost) :]
        # The model's own line first (the innermost model-code frame), then the bundle's model
        # document, then the frames that called it, innermost outward. Source files are read
        # on a worker thread (a huge or slow one must not hold up other requests).
        return OffLoop(lambda: source_locations(innermost) + found + source_locations(callers))

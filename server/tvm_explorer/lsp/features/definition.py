"""``textDocument/definition``: the origin layer(s) of a position in the model document."""

from __future__ import annotations

from lsprotocol import types

from ...navigation import provenance
from .sources import source_locations
from ..session import Session


class Definition:
    """Go to the model layer(s) a piece of IR or code came from."""

    def __init__(self, session: Session):
        self.session = session

    def definition(self, params: types.DefinitionParams) -> list[types.Location]:
        """One location per origin layer; a tensor name in the model goes to its producer."""
        q = self.session.query(params.text_document.uri, params.position)
        if q is None:
            return []
        places = provenance.definition(q.view, q.path, q.offset, q.keep)
        return self.session.locations(q.view, places) + source_locations(q.view, q.path, q.offset, q.keep)

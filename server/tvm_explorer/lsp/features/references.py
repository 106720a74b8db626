"""``textDocument/references``: every place a layer ended up, across all documents."""

from __future__ import annotations

from lsprotocol import types

from ...navigation import provenance
from ..session import Session


class References:
    """List every range sharing the origins of a position."""

    def __init__(self, session: Session):
        self.session = session

    def references(self, params: types.ReferenceParams) -> list[types.Location]:
        """Model entries first when the client asks for the declaration, then every place in
        document order."""
        q = self.session.query(params.text_document.uri, params.position)
        if q is None:
            return []
        include = bool(params.context and params.context.include_declaration)
        places = provenance.references(q.view, q.path, q.offset, include, q.keep)
        return self.session.locations(q.view, places)

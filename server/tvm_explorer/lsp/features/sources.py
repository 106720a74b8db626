"""Locations of the user's source lines (``navigation/sources.py``) for definition."""

from __future__ import annotations

from lsprotocol import types
from pygls.uris import from_fs_path

from tvm_explorer.navigation.sources import read_source_lines


def source_locations(refs: list[tuple[str, int]]) -> list[types.Location]:
    """One location per existing source line of ``refs`` (``navigation.sources.source_refs``;
    the line's text, indentation left out). Reads the files: call it off the event loop."""
    return [
        types.Location(
            from_fs_path(s.file), types.Range(types.Position(s.line, s.start), types.Position(s.line, s.end))
        )
        for s in read_source_lines(refs)
    ]

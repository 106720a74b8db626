"""Locations of the user's source lines (``navigation/sources.py``) for definition."""

from __future__ import annotations

from lsprotocol import types
from pygls.uris import from_fs_path

from ...navigation.sources import source_lines
from ...navigation.view import BundleView, Keep, keep_all


def source_locations(view: BundleView, path: str, offset: int, keep: Keep = keep_all) -> list[types.Location]:
    """One location per existing source line behind the text at ``offset`` (the line's text,
    indentation left out)."""
    return [
        types.Location(from_fs_path(s.file),
                       types.Range(types.Position(s.line, s.start), types.Position(s.line, s.end)))
        for s in source_lines(view, path, offset, keep)
    ]

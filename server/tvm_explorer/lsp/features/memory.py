"""``tvmExplorer/memoryTimeline``: the memory timeline of a bundle as the "Show Memory Timeline"
webview draws it (``navigation/memory_timeline.py``), its places as LSP locations
(docs/lsp-protocol.md)."""

from __future__ import annotations

from typing import Any

from tvm_explorer.lsp.protocol import MemoryTimelineParams
from tvm_explorer.lsp.shared import Session
from tvm_explorer.navigation.memory_timeline import DEFAULT_BANDS, timeline
from tvm_explorer.navigation.view import BundleView, Place


class MemoryTimeline:
    """Answers ``tvmExplorer/memoryTimeline``."""

    def __init__(self, session: Session):
        self.session = session

    def _locate(self, view: BundleView):
        def locate(place: Place) -> dict[str, Any] | None:
            loc = self.session.location(view, place)
            if loc is None:
                return None
            start, end = loc.range.start, loc.range.end
            return {
                "uri": loc.uri,
                "range": {
                    "start": {"line": start.line, "character": start.character},
                    "end": {"line": end.line, "character": end.character},
                },
            }

        return locate

    def memory_timeline(self, params: MemoryTimelineParams | None) -> dict[str, Any]:
        """``{"root": bundle URI, ...timeline}``, or ``{"error": why}``."""
        view = self.session.bundle_view(params.bundle) if params else None
        if view is None:
            return {"error": "no loaded bundle holds this file"}
        root = self.session.uri_of_root(view.root)
        bands = params.bands if params and isinstance(params.bands, int) else DEFAULT_BANDS
        locate = self._locate(view)
        got = timeline(view, locate, bands=bands)
        return got if "error" in got else {"root": root, **got}

"""``tvmExplorer/memoryTimeline``: the memory timeline of a bundle as the "Show Memory Timeline"
webview draws it (``navigation/memory_timeline.py``), its places as LSP locations
(docs/lsp-protocol.md)."""

from __future__ import annotations

from typing import Any

from tvm_explorer.lsp.protocol import MemoryTimelineParams, RequestFailed
from tvm_explorer.lsp.shared import Feature
from tvm_explorer.navigation.memory_timeline import DEFAULT_BANDS, NoTimeline, Timeline, timeline
from tvm_explorer.navigation.view import BundleView, Place


class MemoryTimeline(Feature):
    """Answers ``tvmExplorer/memoryTimeline``."""

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

    def memory_timeline(self, params: MemoryTimelineParams | None) -> Timeline:
        """``{"root": bundle URI, ...timeline}`` (``RequestFailed``: why there is none)."""
        view = self.session.bundle_view(params.bundle) if params else None
        if view is None:
            raise RequestFailed(f"no loaded bundle holds {params.bundle if params else 'this file'}")
        root = self.session.uri_of_root(view.root)
        bands = params.bands if params and isinstance(params.bands, int) else DEFAULT_BANDS
        locate = self._locate(view)
        try:
            got = timeline(view, locate, bands=bands)
        except NoTimeline as err:  # the report shows the same sentence in place of the picture
            raise RequestFailed(str(err)) from None
        got["root"] = root
        return got

"""``tvmExplorer/passDiffAlignment``: the functions of a pass's two documents aligned by name
(``navigation/pass_diff.py``), as ranges of the documents as saved (what a pass diff shows)."""

from __future__ import annotations

from collections.abc import Callable

from lsprotocol import types

from tvm_explorer.lsp.protocol import (
    AlignedFunctionInfo,
    PassDiffAlignmentParams,
    PassDiffAlignmentResult,
    RequestFailed,
)
from tvm_explorer.lsp.shared import Feature, uri_to_path
from tvm_explorer.navigation.pass_diff import Alignment, NotAligned, align
from tvm_explorer.navigation.view import BundleView


class PassDiffAlignment(Feature):
    """Answers ``tvmExplorer/passDiffAlignment``."""

    def _locate(self, uri: object) -> tuple[BundleView, str]:
        if not isinstance(uri, str) or not uri:
            raise RequestFailed("a pass diff needs the URIs of its two documents ('before' and 'after')")
        found = self.session.locate(uri)
        if found is None:
            path = uri_to_path(uri)
            raise RequestFailed(f"no loaded bundle holds {path if path is not None else uri}")
        return found

    def alignment(self, params: PassDiffAlignmentParams | None) -> PassDiffAlignmentResult | None:
        """The aligned functions of ``before`` → ``after``; None when they are not both Relax or
        both TIR documents (a diff of whole documents); RequestFailed, saying why, when either
        is no document of a loaded bundle or they are of two bundles."""
        if params is None:
            raise RequestFailed("a pass diff needs the URIs of its two documents ('before' and 'after')")
        view, before = self._locate(params.before)
        other, after = self._locate(params.after)
        if other is not view:
            raise RequestFailed(f"{before} and {after} are documents of two bundles ({view.root}, {other.root})")
        try:
            got = align(view, before, after)
        except NotAligned as err:
            raise RequestFailed(str(err)) from None
        if got is None:
            return None
        return alignment_result(
            got, self.session.ranger(view, before, as_saved=True), self.session.ranger(view, after, as_saved=True)
        )


Ranger = Callable[[int, int], "types.Range | None"]


def alignment_result(got: Alignment, in_before: Ranger, in_after: Ranger) -> PassDiffAlignmentResult:
    """The answer of an alignment, its offsets made ranges by each document's converter."""

    def convert(convert_range: Ranger, span: tuple[int, int] | None) -> types.Range | None:
        return convert_range(*span) if span is not None else None

    header_a, header_b = convert(in_before, (0, got.headers[0])), convert(in_after, (0, got.headers[1]))
    assert header_a is not None and header_b is not None  # as saved: no edit moves them
    return PassDiffAlignmentResult(
        before_header=header_a,
        after_header=header_b,
        functions=[
            AlignedFunctionInfo(f.name, f.change, convert(in_before, f.before), convert(in_after, f.after))
            for f in got.functions
        ],
        unchanged=got.unchanged,
    )

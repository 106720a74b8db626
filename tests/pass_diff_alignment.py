"""The server's answer to ``tvmExplorer/passDiffAlignment`` for every pass of a bundle, as JSON,
without a language server: for the editor tests (tests/e2e/lib/passDiffSides.mjs) and
bench/pass_diff_pages.mjs, which lay the sides out with the extension's own passDiffAlign.ts.
The same alignment (navigation/pass_diff.py) and the same result (lsp/features/pass_diff.py,
unstructured by the protocol's converter), its ranges in UTF-16 columns as VS Code asks.

    python -m tests.pass_diff_alignment BUNDLE   → {"<before>|<after>": result or null, ...}
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from lsprotocol import types

from tvm_explorer.bundle.reader import Bundle
from tvm_explorer.lsp.features.pass_diff import alignment_result
from tvm_explorer.lsp.protocol import converter_factory
from tvm_explorer.navigation.pass_diff import align
from tvm_explorer.navigation.view import BundleView


def alignments(root: Path) -> dict:
    view = BundleView(Bundle(root))
    converter = converter_factory()

    def ranger(path: str):
        position = view.line_index(path, "utf-16").position

        def convert(start: int, end: int) -> types.Range:
            (l0, c0), (l1, c1) = position(start), position(end)
            return types.Range(types.Position(l0, c0), types.Position(l1, c1))

        return convert

    out: dict = {}
    for p in view.bundle.manifest.get("passes", ()):
        before, after = p.get("before"), p.get("after")
        if before and after and f"{before}|{after}" not in out:
            got = align(view, before, after)
            out[f"{before}|{after}"] = (
                converter.unstructure(alignment_result(got, ranger(before), ranger(after))) if got else None
            )
    return out


if __name__ == "__main__":
    json.dump(alignments(Path(sys.argv[1])), sys.stdout)

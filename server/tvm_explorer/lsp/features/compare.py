"""``tvmExplorer/compareBundles`` and ``tvmExplorer/compareLayerCode``: the comparison of two
bundles (``tvm-explorer compare --json``) and one layer's generated code on either side, for
the editor's comparison tree and its split diffs."""

from __future__ import annotations

import os
from pathlib import Path

from pygls.exceptions import JsonRpcInvalidParams

from tvm_explorer.bundle.format import MANIFEST
from tvm_explorer.compare.compare import Comparison, compare
from tvm_explorer.compare.types import ComparisonJson
from tvm_explorer.errors import ExplorerError
from tvm_explorer.lsp.protocol import (
    CompareBundlesParams,
    CompareLayerCodeParams,
    CompareLayerCodeResult,
    RequestFailed,
)
from tvm_explorer.lsp.shared import Session, uri_to_path
from tvm_explorer.navigation.registry import enclosing_root

_LANGUAGES = {"c": "c", "cuda": "cuda-cpp", "llvm": "llvm"}


class BundleComparisons:
    """Comparisons of two bundles, kept while neither bundle changes on disk."""

    def __init__(self, session: Session):
        self.session = session
        self._kept: dict[tuple[Path, Path], tuple[tuple, Comparison]] = {}

    def _root(self, uri: str) -> Path:
        path = None
        if isinstance(uri, str) and uri.startswith("file:"):
            path = uri_to_path(uri)
        elif isinstance(uri, str) and os.path.isabs(uri):  # the paths a comparison answers with
            path = Path(uri).resolve()
        if path is None:
            raise ExplorerError(f"{uri!r}: not a file URI")
        if (path / MANIFEST).is_file():
            return path
        root = enclosing_root(path)
        if root is None:
            raise ExplorerError(f"{path}: not a bundle (no {MANIFEST})")
        return root

    def _comparison(self, a_uri: str, b_uri: str) -> Comparison:
        a, b = self._root(a_uri), self._root(b_uri)
        stamp = tuple(os.stat(r / MANIFEST).st_mtime_ns for r in (a, b))
        kept = self._kept.get((a, b))
        if kept is not None and kept[0] == stamp:
            return kept[1]
        result = compare(a, b)
        self._kept[(a, b)] = (stamp, result)
        return result

    def _compared(self, a_uri: str, b_uri: str) -> Comparison:
        try:
            return self._comparison(a_uri, b_uri)
        except ExplorerError as err:
            raise RequestFailed(str(err)) from None

    def compare_bundles(self, params: CompareBundlesParams) -> ComparisonJson:
        """``compare --json`` of the two bundles (``RequestFailed``: why they cannot be)."""
        return self._compared(params.a, params.b).to_json()

    def layer_code(self, params: CompareLayerCodeParams) -> CompareLayerCodeResult:
        """One side's generated code of one matched layer (``RequestFailed``: why there is
        none: no such layer, code of different kinds on the two sides)."""
        if params.side not in ("a", "b"):
            raise JsonRpcInvalidParams(f"side {params.side!r}: 'a' or 'b'")
        result = self._compared(params.a, params.b)
        pair = result.pair(params.subgraph, params.op_index)
        if pair is None:
            raise RequestFailed(f"no matched layer with A side op {params.subgraph}:{params.op_index}")
        if not result.same_code_kind:
            raise RequestFailed(
                f"different code kinds ({result.code_kinds_text()}): the layer diff is shown only "
                "between code of one language; compare kernels, time and workspace"
            )
        side = pair[0] if params.side == "a" else pair[1]
        bundle = result.a if params.side == "a" else result.b
        target = str(bundle.manifest.get("target", ""))
        language = _LANGUAGES.get(target, "plaintext")
        if all(p.endswith(".ll") for p, _, _ in side.pieces) and side.pieces:
            language = "llvm"
        return CompareLayerCodeResult(text=side.text(), language=language)

"""The ``tvmExplorer/`` requests that list bundles and passes and report origins."""

from __future__ import annotations

from lsprotocol import types

from tvm_explorer.lsp.protocol import (
    BundleInfo,
    ListBundlesResult,
    ListPassesParams,
    ListPassesResult,
    OriginInfo,
    OriginsResult,
    PassInfo,
)
from tvm_explorer.lsp.shared import Feature
from tvm_explorer.navigation import provenance
from tvm_explorer.navigation.costs import pass_times
from tvm_explorer.navigation.view import BundleView


class ExplorerRequests(Feature):
    """``listBundles``, ``listPasses`` and ``origins`` (see docs/lsp-protocol.md)."""

    def list_bundles(self, _params) -> ListBundlesResult:
        """Every loaded bundle, sorted by directory."""
        out = []
        for root, view in sorted(self.session.registry.bundles.items()):
            manifest = view.bundle.manifest
            model = manifest.get("model")
            out.append(
                BundleInfo(
                    uri=self.session.uri_of_root(root),
                    root=str(root),
                    model=str(model.get("file", "")) if isinstance(model, dict) else "",
                    target=str(manifest.get("target", "")),
                    passes=len(manifest.get("passes", ())),
                    documents=len(view.bundle.documents),
                    problems=[str(p) for p in view.problems],
                )
            )
        return ListBundlesResult(out)

    def list_passes(self, params: ListPassesParams | None) -> ListPassesResult:
        """The recorded pipeline of a bundle (given by its directory or any document)."""
        view = self._bundle(params.bundle) if params else None
        if view is None:
            return ListPassesResult([])
        out = []
        timed = pass_times(view.bundle)
        bisect = view.bundle.bisect
        culprit = bisect.get("culprit") if bisect else None
        for entry in view.bundle.manifest.get("passes", ()):
            try:
                times = timed.get(entry["index"])
                out.append(
                    PassInfo(
                        index=int(entry["index"]),
                        stage=str(entry["stage"]),
                        name=str(entry["name"]),
                        changed=bool(entry.get("changed")),
                        before=self._doc_uri(view, entry.get("before")),
                        after=self._doc_uri(view, entry.get("after")),
                        ms=times["ms"] if times is not None else None,
                        changed_functions=times["changed_functions"] if times is not None else None,
                        culprit=culprit is not None
                        and entry.get("index") == culprit.get("index")
                        and entry.get("name") == culprit.get("name"),
                    )
                )
            except (KeyError, TypeError, ValueError):
                continue  # a malformed entry is left out, the rest still helps
        return ListPassesResult(out)

    def origins(self, params: types.TextDocumentPositionParams | None) -> OriginsResult:
        """The origin layers of a position, each with its model-document location."""
        q = self.session.query(params.text_document.uri, params.position) if params else None
        if q is None:
            return OriginsResult([])
        out = []
        for origin, entry in provenance.origins(q.view, q.path, q.offset, q.keep):
            layer = origin.layer
            out.append(
                OriginInfo(
                    subgraph=layer.subgraph,
                    op_index=layer.op_index,
                    opcode=layer.opcode,
                    outputs=list(layer.outputs),
                    is_output=origin.is_output,
                    location=self.session.location(q.view, entry) if entry else None,
                )
            )
        return OriginsResult(out)

    def _bundle(self, uri: str) -> BundleView | None:
        return self.session.bundle_view(uri)

    def _doc_uri(self, view, rel) -> str | None:
        if not isinstance(rel, str) or view.bundle.document(rel) is None:
            return None
        return self.session.uri(view, rel)

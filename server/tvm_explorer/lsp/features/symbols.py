"""``textDocument/documentSymbol``: the outline of a bundle document."""

from __future__ import annotations

import weakref
from collections import OrderedDict

from lsprotocol import types

from tvm_explorer.lsp.shared import Session
from tvm_explorer.navigation.background import REQUESTS, warm_each
from tvm_explorer.navigation.symbols import Symbol, document_symbols, layer_symbols
from tvm_explorer.navigation.view import BundleView

OUTLINES_KEPT = 48
"""Outlines of one bundle kept (the ones asked for last): all of a large bundle's outlines
took as much memory as the bundle itself."""

OUTLINES_WARMED = 12
"""Outlines built ahead of the editor's first requests after a load: the documents editors
open most (generated code, each stage's last document, then the latest passes). Each is a
few thousand LSP objects; all 47 of a 60 MiB bundle held 12 MiB, a fifth of the bundle. The
others are built when first asked for (10-50 ms for the largest)."""

WORKSPACE_SYMBOLS = 2000
"""Most layers one ``workspace/symbol`` answer lists (the editor filters further as the user
types)."""

SYMBOL_KINDS = {
    "layer": types.SymbolKind.Operator,
    "function": types.SymbolKind.Function,
    "primfunc": types.SymbolKind.Function,
    "binding": types.SymbolKind.Variable,
    "block": types.SymbolKind.Struct,
}


class DocumentSymbols:
    """Functions, PrimFuncs, bindings, blocks and layers, nested."""

    def __init__(self, session: Session):
        self.session = session
        # Outlines of documents the editor shows unchanged, per loaded bundle (an outline of
        # a few thousand entries takes tens of milliseconds to build).
        self._outlines: weakref.WeakKeyDictionary[BundleView, dict] = weakref.WeakKeyDictionary()

    def symbols(self, params: types.DocumentSymbolParams) -> list[types.DocumentSymbol]:
        """The outline; entries an editor change touched are left out (their children stay)."""
        found = self.session.locate(params.text_document.uri)
        if found is None:
            return []
        view, path = found
        if self.session.lines(view, path)[1] is not None:  # edited: no cached answer
            return self._convert(view, path, self.session.ranger(view, path))
        return list(self._saved_outline(view, path))

    def workspace_symbols(self, params: types.WorkspaceSymbolParams) -> list[types.SymbolInformation]:
        """``workspace/symbol``: the layers of every loaded bundle matching the query (by TF
        layer name, node name, module path, opcode), at their model-document entries."""
        query = (params.query if params else "") or ""
        found: list[tuple[int, types.SymbolInformation]] = []
        for view in list(self.session.registry.bundles.values()):
            if view is None:
                continue
            path = view.model_path
            for sym in layer_symbols(view, query, WORKSPACE_SYMBOLS):
                rng = self.session.range(view, path, sym.start, sym.end)
                if rng is None:
                    continue
                info = types.SymbolInformation(
                    name=sym.name,
                    kind=types.SymbolKind.Operator,
                    location=types.Location(self.session.uri(view, path), rng),
                    container_name=" ".join(x for x in (view.root.name, sym.detail) if x),
                )
                found.append((sym.rank, info))
        # Exact matches of every bundle before the looser ones of any (stable: bundle, layer order).
        found.sort(key=lambda item: item[0])
        return [info for _, info in found[:WORKSPACE_SYMBOLS]]

    def warm(self, view: BundleView) -> None:
        """Build the outline of every document of a freshly loaded bundle ahead of the
        editor's requests (run off the event loop: a large document's outline takes tens of
        milliseconds, too long for the first request to wait for): the ``OUTLINES_WARMED``
        documents editors open most."""
        from tvm_explorer.navigation.irsymbols import warm_order

        warm_each(
            view,
            warm_order(view)[:OUTLINES_WARMED],
            lambda path: self._saved_outline(view, path),
            lambda: self.session.registry.is_current(view),
        )

    def _saved_outline(self, view: BundleView, path: str) -> list[types.DocumentSymbol]:
        """The outline of a document as the bundle has it, built once per encoding (served
        while the editor shows the document unedited)."""
        cache = self._outlines.setdefault(view, OrderedDict())
        key = (path, self.session.encoding)
        got = cache.get(key)
        if got is None:
            got = self._convert(view, path, self.session.ranger(view, path, as_saved=True))
            # Replaced, never mutated: the warm-up thread and requests read it together.
            kept = OrderedDict(cache)
            kept[key] = got
            while len(kept) > OUTLINES_KEPT:
                kept.popitem(last=False)
            self._outlines[view] = kept
        return got

    def _convert(self, view: BundleView, path: str, to_range) -> list[types.DocumentSymbol]:
        return self._convert_all(view.bundle.text(path), to_range, document_symbols(view, path))

    def _convert_all(self, text: str, to_range, symbols: list[Symbol]) -> list[types.DocumentSymbol]:
        out = []
        for n, sym in enumerate(symbols):
            if n % 64 == 0:
                REQUESTS.checkpoint()  # a warm-up's large outline gives way (tens of ms)
            children = self._convert_all(text, to_range, sym.children)
            rng = to_range(sym.start, sym.end)
            first_line_end = text.find("\n", sym.start, sym.end)
            sel = to_range(sym.start, sym.end if first_line_end < 0 else first_line_end)
            if rng is None or sel is None:
                out.extend(children)
                continue
            out.append(
                types.DocumentSymbol(
                    name=sym.name or "?",
                    detail=sym.detail or None,
                    kind=SYMBOL_KINDS.get(sym.kind, types.SymbolKind.Object),
                    range=rng,
                    selection_range=sel,
                    children=children or None,
                )
            )
        return out

"""Outlines are built ahead of the editor's requests right after a bundle loads (in-process:
the server runs the same ``DocumentSymbols.warm`` on a worker thread after each load)."""

from __future__ import annotations

from lsprotocol import types

from tvm_explorer.lsp.features.symbols import DocumentSymbols
from tvm_explorer.lsp.shared import Session
from tvm_explorer.navigation import registry


def _loaded(root):
    session = Session()
    view = registry.load(root)
    session.registry.install(view.root, view, registry.signature(view.root))
    return session, view


def _outline(feature, session, view, path):
    uri = session.uri(view, path)
    return feature.symbols(types.DocumentSymbolParams(text_document=types.TextDocumentIdentifier(uri)))


def test_warm_outlines_are_the_outlines_built_on_request(fake_workspace):
    root = (fake_workspace / "bundles" / "tiny").resolve()
    session, view = _loaded(root)
    warmed = DocumentSymbols(session)
    warmed.warm(view)
    assert set(warmed._outlines[view]) == {(d.path, "utf-16") for d in view.bundle.documents}

    cold_session, cold_view = _loaded(root)
    cold = DocumentSymbols(cold_session)
    for doc in view.bundle.documents:
        got = _outline(warmed, session, view, doc.path)
        assert got == _outline(cold, cold_session, cold_view, doc.path), doc.path
    assert any(_outline(warmed, session, view, d.path) for d in view.bundle.documents)


def test_warming_a_replaced_bundle_stops(fake_workspace):
    root = (fake_workspace / "bundles" / "tiny").resolve()
    session, view = _loaded(root)
    newer = registry.load(root)
    session.registry.install(root, newer, registry.signature(root))
    feature = DocumentSymbols(session)
    feature.warm(view)
    assert view not in feature._outlines


def test_a_large_bundle_warms_the_outlines_editors_open_most(real_workspace):
    from tvm_explorer.lsp.features.symbols import OUTLINES_WARMED
    from tvm_explorer.navigation.irsymbols import warm_order

    session, view = _loaded(real_workspace["bundles"]["small_cnn_fp32_cuda"])
    assert len(view.bundle.documents) > OUTLINES_WARMED
    warmed = DocumentSymbols(session)
    warmed.warm(view)
    paths = {path for path, _ in warmed._outlines[view]}
    assert paths == set(warm_order(view)[:OUTLINES_WARMED])
    last = {d.stage: d.path for d in view.bundle.documents}
    assert {d.path for d in view.bundle.documents if d.stage == "code"} | {last["tir"], last["relax"]} <= paths

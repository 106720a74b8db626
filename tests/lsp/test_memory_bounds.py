"""What the server remembers between requests is bounded (issue 15, goal 1: server memory
within 1.5× the bundle's bytes), and answers do not change when a bound is reached."""

from __future__ import annotations

from tvm_explorer.lsp import session as session_module
from tvm_explorer.lsp.session import Session
from tvm_explorer.navigation import registry, view as view_module
from tvm_explorer.navigation.positions import LineIndex


def _loaded(real_workspace, name="small_cnn_int8"):
    root = real_workspace["bundles"][name]
    session = Session()
    view = registry.load(root)
    session.registry.install(root, view, registry.signature(root))
    return session, view


def _every_place(view):
    lmap = view.layer_map
    return [p for lid in range(len(view.bundle.layers)) for p in lmap.places(lid)]


def test_locations_remembered_are_bounded_and_answers_unchanged(real_workspace, monkeypatch):
    session, view = _loaded(real_workspace)
    places = _every_place(view)
    assert len(places) > 60
    unbounded = session.locations(view, places)
    monkeypatch.setattr(session_module, "LOCATIONS_KEPT", 25)
    small = Session()
    small.registry = session.registry
    for _ in range(2):
        assert small.locations(view, places) == unbounded
        assert 0 < len(small._locations[view]) <= 25


def test_places_remembered_are_bounded_and_answers_unchanged(real_workspace, monkeypatch):
    _session, view = _loaded(real_workspace)
    lmap = view.layer_map
    layers = range(len(view.bundle.layers))
    want = {lid: lmap.places_of((lid,)) for lid in layers}
    lmap._places_of.clear()
    lmap._places_of_size = 0
    monkeypatch.setattr(view_module, "PLACES_CACHE_LIMIT", 20)
    for _ in range(2):
        for lid in layers:
            assert lmap.places_of((lid,)) == want[lid]
            assert lmap._places_of_size <= max(20, len(want[lid]))


def test_line_starts_take_four_bytes_a_line():
    text = "x = 1\n" * 1000
    lines = LineIndex(text, "utf-16", lambda: text)
    assert lines.held_bytes() == 4 * 1001
    assert [lines.position(o) for o in (0, 6, 5999)] == [(0, 0), (1, 0), (999, 5)]

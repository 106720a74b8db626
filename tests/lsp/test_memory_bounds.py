"""What the server remembers between requests is bounded (issue 15, goal 1: server memory
within 1.5× the bundle's bytes), and answers do not change when a bound is reached."""

from __future__ import annotations

from tvm_explorer.lsp import shared as session_module
from tvm_explorer.lsp.shared import Session
from tvm_explorer.navigation import registry
from tvm_explorer.navigation import view as view_module
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


def test_text_cache_makes_room_before_reading(real_workspace, monkeypatch):
    """The reader's text cache evicts before it reads a document, not after: the texts it
    drops and the one being read never all live at once; what it keeps stays within bounds."""
    from tvm_explorer.bundle import reader

    _session, view = _loaded(real_workspace)
    bundle = view.bundle
    paths = [d.path for d in bundle.documents if d.stage in ("relax", "tir")]
    sizes = {p: bundle._identities[p][2] for p in paths}
    limit = 2 * max(sizes.values())
    monkeypatch.setattr(reader, "TEXT_CACHE_CHARS", limit)
    bundle._texts.clear()
    bundle._text_chars = 0
    real_read = bundle._read_text
    at_read = []

    def spy(path, *args, **kwargs):
        at_read.append(bundle._text_chars + sizes[path])
        return real_read(path, *args, **kwargs)

    monkeypatch.setattr(bundle, "_read_text", spy)
    for path in paths * 2:
        assert bundle.text(path) == real_read(path)
        assert bundle._text_chars <= limit
        assert bundle._text_chars == sum(map(len, bundle._texts.values()))
    assert len(at_read) > len(paths) and max(at_read) <= limit

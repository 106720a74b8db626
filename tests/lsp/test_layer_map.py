"""The layer map on real bundles, against a direct reading of its definition: a layer's
places are the ranges holding it that hold no other range holding it (innermost), outside
the model document, in pipeline order then by position; its model places are the model
document's "layer" ranges. The map keeps places as packed numbers; every way of reading them
must give the same places."""

from __future__ import annotations

import gc

import pytest

from tvm_explorer.bundle import index_load
from tvm_explorer.bundle.reader import Bundle
from tvm_explorer.navigation import irsymbols, registry
from tvm_explorer.navigation.places import _last_of_stage
from tvm_explorer.navigation.view import BundleView, Place


def _innermost_places(view) -> dict[int, list[Place]]:
    out: dict[int, list[Place]] = {}
    layers_of_set = [{lid for lid, _ in s} for s in view.bundle.origin_sets]
    for doc in view.bundle.documents:
        if doc.stage == "model":
            continue
        index = view.bundle.index(doc.path)
        ranges, parents = list(index.ranges), index.parents
        holds_inner: set[tuple[int, int]] = set()  # (range, layer): a range inside holds it
        for i, rng in enumerate(ranges):
            for lid in layers_of_set[rng.origin_set]:
                j = parents[i]
                while j >= 0 and (j, lid) not in holds_inner:
                    holds_inner.add((j, lid))
                    j = parents[j]
        for i, rng in enumerate(ranges):
            for lid in sorted(layers_of_set[rng.origin_set]):
                if (i, lid) not in holds_inner:
                    out.setdefault(lid, []).append(Place.of(doc.path, rng))
    return out


def _view(root, how: str, monkeypatch):
    """The bundle at ``root`` loaded as the server loads it, its layer map's parts made while
    ``index.json`` is parsed (here, or streamed in from the worker), or a map built after."""
    if how == "worker":
        monkeypatch.setattr(index_load, "WORKER_MIN_BYTES", 0)
        monkeypatch.setattr(index_load, "parse_index", lambda *a: pytest.fail("the worker did not run"))
    if how == "no parts":
        bundle = Bundle(root)
        view = BundleView(bundle, bundle.preload())
    else:
        view = registry.load(root)
        assert view.bundle._prepared[1], "no parts were made while parsing"
    return view


@pytest.mark.parametrize("how", ["in-process", "worker", "no parts"])
@pytest.mark.parametrize("name", ["small_cnn_int8", "small_cnn_fp32_cuda"])
def test_places_are_the_innermost_ranges_of_each_layer(real_workspace, name, how, monkeypatch):
    view = _view(real_workspace["bundles"][name], how, monkeypatch)
    lmap = view.layer_map
    assert view.bundle.take_prepared() == (None, {})  # handed over, not kept twice
    expected = _innermost_places(view)
    layers = range(len(view.bundle.layers))
    assert sum(map(len, expected.values())) > 50
    last = _last_of_stage(view)
    for lid in layers:
        want = expected.get(lid, [])
        got = lmap.places(lid)
        assert list(got) == want and len(got) == len(want), lid
        assert [got[i] for i in range(len(got))] == want and got[1:3] == want[1:3]
        assert got.document_count() == len({p.path for p in want})
        assert lmap.places_of((lid,)) == want
        assert lmap.places_in((lid,), last) == [p for p in want if p.path in last]
    everything = tuple(layers)
    merged = sorted(
        {p for lid in layers for p in expected.get(lid, [])},
        key=lambda p: (view.bundle.document(p.path).order, p.start, -p.end),
    )
    assert lmap.places_of(everything) == merged
    assert lmap.places_in(everything, last) == [p for p in merged if p.path in last]
    model = view.model_path
    for lid in layers:
        entries = [
            Place.of(model, r)
            for r in view.bundle.index(model).ranges
            if r.kind == "layer" and lid in {l for l, _ in view.bundle.origin_sets[r.origin_set]}
        ]
        assert sorted(lmap.model_places.get(lid, []), key=lambda p: p.start) == entries


def test_warm_ups_keep_what_they_make_out_of_the_collector(real_workspace):
    view = registry.load(real_workspace["bundles"]["small_cnn_fp32_cuda"])
    gc.unfreeze()
    irsymbols.warm(view)
    assert gc.get_freeze_count() > 0  # the warm-up's tables are no longer walked by collections
    gc.unfreeze()


def test_a_document_found_damaged_after_its_part_was_made_has_no_places(real_workspace, tmp_path):
    """Parts are made while ``index.json`` is parsed, before the documents are checked: one
    that fails its check (here: edited after the compile) must still be left out."""
    import shutil

    root = tmp_path / "b"
    shutil.copytree(real_workspace["bundles"]["small_cnn_int8"], root)
    clean = registry.load(root)
    victim = next(
        d.path
        for d in clean.bundle.documents
        if d.stage == "tir"
        and clean.layer_map._ranges
        and any(d.path in per_path for per_path in clean.layer_map._ranges.values())
    )
    with open(root / victim, "a") as f:
        f.write("\n# edited\n")
    view = registry.load(root)
    assert [str(p) for p in view.problems] and victim in str(view.problems[0])
    assert victim in view.bundle._prepared[1]  # its part was made...
    lmap = view.layer_map
    assert not any(victim in per_path for per_path in lmap._ranges.values())  # ...and not used
    assert not any(p.path == victim for lid in range(len(view.bundle.layers)) for p in lmap.places(lid))

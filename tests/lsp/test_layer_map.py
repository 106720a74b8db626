"""The layer map on real bundles, against a direct reading of its definition: a layer's
places are the ranges holding it that hold no other range holding it (innermost), outside
the model document, in pipeline order then by position; its model places are the model
document's "layer" ranges. The map keeps places as packed numbers; every way of reading them
must give the same places."""

from __future__ import annotations

import gc

import pytest

from tvm_explorer.navigation import irsymbols, registry
from tvm_explorer.navigation.places import _last_of_stage
from tvm_explorer.navigation.view import Place


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


@pytest.mark.parametrize("name", ["small_cnn_int8", "small_cnn_fp32_cuda"])
def test_places_are_the_innermost_ranges_of_each_layer(real_workspace, name):
    view = registry.load(real_workspace["bundles"][name])
    lmap = view.layer_map
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
    merged = sorted({p for lid in layers for p in expected.get(lid, [])},
                    key=lambda p: (view.bundle.document(p.path).order, p.start, -p.end))
    assert lmap.places_of(everything) == merged
    assert lmap.places_in(everything, last) == [p for p in merged if p.path in last]
    model = view.model_path
    for lid in layers:
        entries = [Place.of(model, r) for r in view.bundle.index(model).ranges
                   if r.kind == "layer" and lid in {l for l, _ in view.bundle.origin_sets[r.origin_set]}]
        assert sorted(lmap.model_places.get(lid, []), key=lambda p: p.start) == entries


def test_warm_ups_keep_what_they_make_out_of_the_collector(real_workspace):
    view = registry.load(real_workspace["bundles"]["small_cnn_fp32_cuda"])
    gc.unfreeze()
    irsymbols.warm(view)
    assert gc.get_freeze_count() > 0  # the warm-up's tables are no longer walked by collections
    gc.unfreeze()

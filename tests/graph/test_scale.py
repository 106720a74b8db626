"""The graph app on large graphs, in a real headless chromium (``scale_check.mjs``): a graph
document of thousands of layers (tests/graph/synthetic.py: no compile) and the tiny Llama the
session compiles anyway. Never a blank page (issue 37: a stack overflow in the layout at ~4 500
layers), repeated modules collapsed with their rollups, positions kept when a group opens,
highlighted layers brought on screen, every layer reachable by search."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
from tests.graph.synthetic import chain_document, llm_document
from tests.graph.test_report import ARTIFACTS, _browser_missing

from tvm_explorer.graphview.report import render_html

HERE = Path(__file__).resolve().parent
NO_SECTIONS = {"hot_layers": [], "passes": [], "numerics": None, "problems": []}


@pytest.fixture(scope="module")
def chromium_ready():
    missing = _browser_missing()
    if missing:
        if os.environ.get("CI"):
            pytest.fail(f"{missing}: run scripts/setup-test.sh")
        pytest.skip(missing)


def check(html: Path, shots: str, spec: dict) -> dict:
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    proc = subprocess.run(
        ["node", str(HERE / "scale_check.mjs"), str(html), str(ARTIFACTS / shots), json.dumps(spec)],
        capture_output=True,
        text=True,
        timeout=600,
        cwd=HERE,
    )
    assert proc.returncode == 0, proc.stderr
    found = json.loads(proc.stdout)
    assert found["errors"] == [] and found["requests"] == [], (found["errors"], found["requests"])
    return found


def members(doc: dict, gid: str) -> list[dict]:
    """The layers of a group's scope, at any depth."""
    parent = {g["id"]: g["parent"] for g in doc["groups"]}
    out = []
    for n in doc["nodes"]:
        g = n["group"]
        while g is not None and g != gid:
            g = parent[g]
        if g == gid:
            out.append(n)
    return out


def test_5000_layers_without_scopes_are_drawn_in_parts(chromium_ready, tmp_path):
    """Issue 37: 4 500 layers left the page blank. Now: painted, a notice saying the graph is
    drawn in parts, and the last layer found by search (its part opened)."""
    html = tmp_path / "chain.html"
    html.write_text(render_html(chain_document(5000), NO_SECTIONS))
    found = check(html, "chain5000", {"search": "op_4999", "reveal": "4999"})
    assert found["painted"] > 0 and found["mode"] == "worker"
    assert "5,000 layers" in found["notice"] and "parts" in found["notice"], found["notice"]
    assert 0 < len(found["layers"]) <= 240 and len(found["collapsed"]) >= 20
    assert found["matches"] == 1
    assert found["revealed"] is True and found["revealedSelected"] == ["4999"]


def test_an_llm_opens_on_its_decoder_layers(chromium_ready, tmp_path):
    """A 32-decoder-layer LLM-shaped graph (1 838 layers): each decoder layer one collapsed box
    whose time is the sum of its layers'; opening one moves nothing above it and everything below
    by the same amount (closing it puts everything back); three layers far apart highlighted are
    all brought on screen; a layer inside a collapsed decoder layer is found by search; the panel
    never takes more than half of the view."""
    doc = llm_document(32)
    html = tmp_path / "llm.html"
    html.write_text(render_html(doc, NO_SECTIONS))
    by_path = {g["path"]: g["id"] for g in doc["groups"]}
    name = {n["name"]: n["id"] for n in doc["nodes"]}
    far_apart = [name["model.embed_tokens/embedding"], name["model.norm/mul_1"], name["lm_head/mm"]]
    target = name["model.layers.30.mlp.down_proj/mm"]
    found = check(
        html,
        "llm32",
        {
            "overlay": "time",
            "rollups": True,
            "expand": by_path["model.layers.5"],
            "highlight": far_apart,
            "search": "layers.30.mlp.down_proj/mm",
            "reveal": target,
            "panel": True,
            "compare": by_path["model.layers.0"],
            "weights": True,
        },
    )
    layers = [by_path[f"model.layers.{i}"] for i in range(32)]
    assert sorted(found["collapsed"]) == sorted(layers)
    assert "model.layers.{0..31}" in found["notice"]
    assert found["fontPx"] >= 11  # shape text at the opening zoom
    assert found["firstOnScreen"] is True
    for gid in layers:
        expected = sum(n["metrics"]["time"] for n in members(doc, gid))
        assert found["rollups"][gid] == pytest.approx(expected, rel=1e-9), gid
    opened = found["after"]["groups"][by_path["model.layers.5"]]
    top = found["before"]["collapsed"][by_path["model.layers.5"]]["y"]
    moved = set()
    for kind in ("nodes", "collapsed"):
        for key, box in found["before"][kind].items():
            if key == by_path["model.layers.5"]:
                continue
            now = found["after"][kind][key]
            assert now["x"] == box["x"], key
            if box["y"] < top:
                assert now["y"] == box["y"], key
            else:
                moved.add(round(now["y"] - box["y"], 6))
    assert len(moved) == 1 and moved.pop() > 0 and opened["height"] > 100
    assert found["again"] == found["before"]
    assert found["highlighted"] == {i: f'[data-layer="{i}"]' for i in far_apart}
    assert found["matches"] == 1 and found["revealed"] is True and found["revealedSelected"] == [target]
    assert found["panelShare"] <= 0.5 and found["panelClosedWidth"] == 0
    assert found["graphShare"] >= found["panelShare"]  # the graph keeps at least half
    # ×32: the 32 decoder layers side by side, each with its summed time
    assert len(found["compare"]) == 32 and found["compareHead"][1] == "Measured time"
    assert found["compare"][7][0] == "layers.7"
    assert found["compare"][7][1] == f"{sum(n['metrics']['time'] for n in members(doc, layers[7])):.2f} ms"
    # "weights": the weight-only nodes outside the (collapsed) decoder layers are drawn again
    folded_outside = [n for n in doc["nodes"] if n["fold"] and not n["name"].startswith("model.layers.")]
    assert len(folded_outside) >= 4 and found["withWeights"] - found["withoutWeights"] == len(folded_outside)


def test_the_tiny_llama_rollups_are_its_layers_costs(chromium_ready, llm_bundles, tmp_path):
    """The real tiny Llama (2 decoder layers, profiled): both decoder layers open collapsed, each
    box's time is the sum of its layers' measured times in costs.json, and the layers of a kernel
    of three layers inside a decoder layer, highlighted, are opened and all on screen."""
    from tvm_explorer.cli.options import load_bundle
    from tvm_explorer.graphview.document import graph_document
    from tvm_explorer.graphview.report import render_report
    from tvm_explorer.navigation.view import BundleView

    bundle = llm_bundles.get("llama")
    view = BundleView(load_bundle(str(bundle)))
    doc = graph_document(view, places=False)
    html = tmp_path / "llama.html"
    html.write_text(render_report(view))
    costs = json.loads((bundle / "costs.json").read_text())
    time_of = {str(lay["id"]): lay["time_ms"] for lay in costs["layers"]}
    shared = min((k for k in costs["kernels"] if len(k["layers"]) >= 3), key=lambda k: len(k["layers"]))
    found = check(
        html, "llama", {"overlay": "time", "rollups": True, "highlight": [str(i) for i in shared["layers"][:3]]}
    )
    decoder = [g["id"] for g in doc["groups"] if g.get("repeat")]
    assert [g["path"] for g in doc["groups"] if g.get("repeat")] == ["m.model.layers.0", "m.model.layers.1"]
    assert sorted(found["collapsed"]) == sorted(decoder)
    for gid in decoder:
        expected = sum(time_of[n["id"]] for n in members(doc, gid) if time_of.get(n["id"]) is not None)
        assert found["rollups"][gid] == pytest.approx(expected, rel=1e-9)
    hosts = {n["id"]: n.get("fold") or n["id"] for n in doc["nodes"]}
    assert found["highlighted"] == {i: f'[data-layer="{hosts[i]}"]' for i in found["highlighted"]}  # opened, on screen


def test_a_long_run_of_decoder_layers_is_drawn_in_parts(chromium_ready, tmp_path):
    """70 decoder layers (more than 64 in a row): drawn in parts of 32 (layers.0–31, …) that
    share one layout, every decoder layer still one collapsed box; opening one and closing it
    puts everything back; a layer of the last part is found and brought on screen."""
    doc = llm_document(70)
    html = tmp_path / "llm70.html"
    html.write_text(render_html(doc, NO_SECTIONS))
    by_path = {g["path"]: g["id"] for g in doc["groups"]}
    target = {n["name"]: n["id"] for n in doc["nodes"]}["model.layers.69.mlp.down_proj/mm"]
    found = check(
        html,
        "llm70",
        {"expand": by_path["model.layers.40"], "search": "layers.69.mlp.down_proj/mm", "reveal": target},
    )
    assert found["painted"] > 0 and found["mode"] == "worker"
    assert sorted(found["collapsed"]) == sorted(by_path[f"model.layers.{i}"] for i in range(70))
    assert "model.layers.{0..69}" in found["notice"] and "parts of at most" not in found["notice"]
    assert found["again"] == found["before"]
    assert found["matches"] == 1 and found["revealed"] is True and found["revealedSelected"] == [target]

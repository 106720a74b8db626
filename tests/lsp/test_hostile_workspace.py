"""Issue 18: an unrelated manifest.json at the workspace root, and bundle strings crafted to
become links, images or HTML in a hover."""

from __future__ import annotations

import json

from tests.markdown_html import render_markdown

from .fake_bundle import write_fake_bundle
from .hostile import RawServer

PAYLOADS = [
    "[click](command:workbench.action.files.delete)",
    "![x](https://evil.example/pixel.png)",
    "<img src=x onerror=alert(1)>",
    "https://evil.example/auto",
    "www.evil.example",
    "`` ` ``\n# heading\n\n- item",
    "<https://evil.example/angle>",
    "[ref]\n\n[ref]: https://evil.example/ref",
    "&lt;b&gt; &#x3C;img&#x3E;",
]


def test_unrelated_manifest_at_the_root_does_not_stop_discovery(tmp_path):
    ws = tmp_path / "webapp"
    ws.mkdir()
    (ws / "manifest.json").write_text(json.dumps({"name": "my web app", "icons": []}))
    (ws / "public").mkdir()
    (ws / "public" / "manifest.json").write_text("{}")
    write_fake_bundle(ws / "out" / "model.bundle")
    srv = RawServer()
    try:
        srv.initialize(ws)
        bundles = srv.wait_bundles(1, timeout=30)
        assert bundles[0]["root"].endswith("out/model.bundle")
        assert not [m for m in srv.notifications if m.get("method") == "window/showMessage"]
    finally:
        srv.close()


def test_bundle_strings_in_a_hover_are_text_never_markup(tmp_path):
    from tvm_explorer.navigation import registry
    from tvm_explorer.navigation.hover import hover

    hovers = []
    for i, payload in enumerate(PAYLOADS):
        root = write_fake_bundle(tmp_path / f"b{i}")
        index = json.loads((root / "index.json").read_text())
        layer = index["layers"][0]
        layer["opcode"] = payload
        layer["outputs"] = [payload]
        layer["output_types"] = [{"shape": [payload], "dtype": payload}]
        (root / "index.json").write_text(json.dumps(index))
        manifest = json.loads((root / "manifest.json").read_text())
        manifest["target"] = payload
        manifest["model"]["file"] = payload
        for p in manifest["passes"]:
            p["name"] = payload
        manifest["traces"][0]["rule"] = payload
        manifest["traces"][0]["path"] = payload
        (root / "manifest.json").write_text(json.dumps(manifest))
        view = registry.load(root)
        for path, needle in (
            ("code/module.c", "t[i] = (x_1"),
            ("relax/000-import.relax", "lv = R"),
            ("model.tflgraph", "op 0"),
            ("tir/012-s_tir.LowerOpaqueBlock.tir", "t[i] ="),
        ):
            text = view.bundle.text(path)
            got = hover(view, path, text.index(needle) + 1)
            assert got is not None, (path, payload)
            hovers.append(got[0])
    for markdown, html in zip(hovers, render_markdown(hovers)):
        assert "<a " not in html and "<img" not in html, (markdown, html)
        assert "<h1" not in html and "<script" not in html

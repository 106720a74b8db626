"""Issue 18, server side: small bundles crafted to cost memory and time, and bundles that
race the server. Reproductions from the hostile review, bounded."""

from __future__ import annotations

import os
import time
import tracemalloc

from tests.timing_goals import record

from .fake_bundle import write_fake_bundle
from .hostile import RawServer, write_nested_bundle

TIR = "tir/000-input.tir"


def _layer_map_peak(tmp_path, depth: int) -> int:
    from tvm_explorer.navigation import registry

    root = write_nested_bundle(tmp_path / f"n{depth}", depth)
    view = registry.load(root)
    tracemalloc.start()
    try:
        view.layer_map  # noqa: B018 - built on first use
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_layer_map_memory_is_linear_in_the_ranges(tmp_path):
    """16k nested ranges with a layer each took 5.5 GB: the set of layers below every range
    was kept (quadratic). 4x the ranges must cost about 4x, not 16x."""
    small, large = _layer_map_peak(tmp_path, 1000), _layer_map_peak(tmp_path, 4000)
    assert large / small < 6, (small, large)
    assert large < 40 * 2**20


def _hover(srv: RawServer, path, line=0, character=0) -> dict:
    return srv.reply(
        srv.request(
            "textDocument/hover",
            {"textDocument": {"uri": path.as_uri()}, "position": {"line": line, "character": character}},
        )
    )


def test_costly_bundles_do_not_hold_up_the_server(tmp_path):
    """A 16k-range nested bundle answers definition in bounded memory; a bundle of five
    sparse 250 MiB documents (a few KB on disk) is refused as too large, by name; an
    unrelated bundle's first hover does not wait for either."""
    ws = tmp_path / "ws"
    nested = write_nested_bundle(ws / "a-nested", 16000)
    big = write_fake_bundle(ws / "b-sparse")
    for doc in (
        "relax/000-import.relax",
        "relax/004-LegalizeOps.relax",
        "relax/007-FuseTIR.relax",
        "tir/000-input.tir",
        "tir/012-s_tir.LowerOpaqueBlock.tir",
    ):
        with open(big / doc, "r+b") as f:
            f.truncate(250 * 2**20)
    tiny = write_fake_bundle(ws / "c-tiny")
    srv = RawServer()
    try:
        started = time.monotonic()
        srv.initialize(ws)
        hover = _hover(srv, tiny / "relax/000-import.relax", 5, 14)
        first_hover = time.monotonic() - started
        assert hover.get("result"), hover
        assert first_hover < 10, first_hover

        def says_refused(m):
            return m.get("method") == "window/showMessage" and "b-sparse" in m["params"]["message"]

        # Bundles load side by side: the refusal may have come before the hover's answer.
        refused = next(filter(says_refused, srv.notifications), None) or srv.reply(match=says_refused, timeout=60)
        assert "too large" in refused["params"]["message"]
        bundles = srv.wait_bundles(2)
        assert sorted(os.path.basename(b["root"]) for b in bundles) == ["a-nested", "c-tiny"]
        t0 = time.monotonic()
        got = srv.reply(
            srv.request(
                "textDocument/definition",
                {"textDocument": {"uri": (nested / TIR).as_uri()}, "position": {"line": 0, "character": 16000}},
            ),
            timeout=60,
        )
        took = time.monotonic() - t0
        assert len(got["result"]) == 1, got
        assert srv.rss_mib() < 400, srv.rss_mib()
        assert took < 20, took
        # The refused bundle answers empty, never with its documents.
        assert _hover(srv, big / "model.tflgraph", 2, 4).get("result") is None
    finally:
        srv.close()


def test_bundle_copied_over_file_by_file_is_reloaded_once_settled(tmp_path):
    """Copying a new bundle over an old one with the JSON files first (cp/rsync order) raised
    a pop-up per document and left the bundle "damaged" for good: only the manifest was
    watched. Every file is watched now, and a bundle is reloaded once it stops changing."""
    import shutil

    ws = tmp_path / "ws"
    root = write_fake_bundle(ws / "b")
    staging = write_nested_bundle(tmp_path / "staging", 40)
    srv = RawServer()
    try:
        srv.initialize(ws)
        srv.wait_bundles(1)
        files = sorted(p.relative_to(staging) for p in staging.rglob("*") if p.is_file())
        files.sort(key=lambda p: p.suffix != ".json")  # JSON first, as cp and rsync often do
        for rel in files:  # slower than the poll: the server looks mid-copy many times
            shutil.copyfile(staging / rel, root / rel)
            time.sleep(0.15)
        copied = time.monotonic()
        bundles = srv.wait_bundles(
            1,
            timeout=15,
            predicate=lambda b: b[0]["documents"] == 7 and not b[0]["problems"] and _outline_size(srv, root) == 40,
        )
        assert time.monotonic() - copied < 5
        assert not bundles[0]["problems"]
        srv.reply(srv.request("shutdown"))
        srv.notify("exit")
        srv.proc.wait(10)
        reports = [m for m in srv.notifications + _drain(srv) if m.get("method") == "window/showMessage"]
        assert len(reports) <= 1, reports  # at most one message for the bundle, not one per document
    finally:
        srv.close()


def _outline_size(srv: RawServer, root) -> int:
    got = (
        srv.reply(srv.request("textDocument/documentSymbol", {"textDocument": {"uri": (root / TIR).as_uri()}}))[
            "result"
        ]
        or []
    )
    count, todo = 0, list(got)
    while todo:
        sym = todo.pop()
        count += 1
        todo += sym.get("children") or []
    return count


def _drain(srv: RawServer) -> list[dict]:
    srv._reader.join(5)
    out = []
    while not srv.messages.empty():
        out.append(srv.messages.get())
    return out


def _step_back_times(folder, n: int) -> dict[str, float]:
    """Seconds of one step back (a pass, an IR level) from the innermost of ``n`` nested ranges
    whose key the previous document holds ``n`` times (with other layers each)."""
    import json

    from tvm_explorer.navigation import registry
    from tvm_explorer.navigation.chain import previous_step
    from tvm_explorer.navigation.stages import previous_stage

    lowered = "tir/012-s_tir.LowerOpaqueBlock.tir"
    root = write_nested_bundle(folder, 2 * n, doc=TIR)
    index = json.loads((root / "index.json").read_text())
    doc = index["documents"][TIR]
    # The first n nested ranges stay in tir/000; the other n (other layers) move to the next
    # TIR document; all carry the same key.
    text = "(" * n + ")" * n + "\n"
    moved = [[i, 2 * n - i, r[2], "block", "k"] for i, r in enumerate(doc["ranges"][n:])]
    doc["ranges"] = [[i, 2 * n - i, r[2], "block", "k"] for i, r in enumerate(doc["ranges"][:n])]
    doc["length"] = len(text)
    (root / TIR).write_text(text)
    (root / lowered).write_text(text)
    index["documents"][lowered] = {"length": len(text), "ranges": moved}
    (root / "index.json").write_text(json.dumps(index))
    view = registry.load(root)
    assert not view.problems, view.problems
    view.layer_map  # noqa: B018 - built on first use
    times = {}
    for step in (previous_step, previous_stage):  # one pass back, one IR level back
        t0 = time.monotonic()
        found = step(view, lowered, n)
        times[step.__name__] = time.monotonic() - t0
        assert found  # falls back to the model entries of its layer
    return times


def test_previous_stage_over_thousands_of_same_key_ranges_is_fast(tmp_path):
    """Ranges nested thousands deep whose key the previous document holds thousands of times
    (with other layers each): one step back compared every pair (quadratic per request). Side
    by side with a quarter of the ranges, a step costs about 4 times as much, not 16; the goal
    of 2 s at 5000 is judged by bench/timing_goals.py, the test asserts 20 s."""
    quarter = _step_back_times(tmp_path / "quarter", 1250)
    whole = _step_back_times(tmp_path / "whole", 5000)
    for name, took in whole.items():
        record(f"lsp: {name} over 5000 nested same-key ranges", took, 2.0)
        assert took < 20, (name, took)
        assert took < 8 * quarter[name] + 1.0, (name, took, "with a quarter of the ranges", quarter[name])

"""A ``.pt2`` viewed as a model document (the editor's preview, frontends/preview.py) is bounded
before anything is decompressed or rendered (issue 37 item 6): a few hundred KB of zip that
would inflate to hundreds of MB of JSON, a graph JSON nested too deeply for the JSON parser, and a
small graph whose arguments would render to tens of MB of text each end with one message naming
the file, within a small memory budget (they took the server to its 6 GiB cap, rendered 57 MB,
or raised an InternalError)."""

from __future__ import annotations

import json
import tracemalloc
import zipfile

import pytest

from tvm_explorer.errors import ModelError
from tvm_explorer.frontends.preview import model_document_text

ENTRY = "m/models/model.json"


def _program(nodes: list) -> dict:
    return {
        "graph_module": {
            "graph": {"nodes": nodes, "tensor_values": {}, "inputs": [], "outputs": []},
            "signature": {"input_specs": [], "output_specs": []},
        },
        "torch_version": "2.13.0",
    }


def _archive(path, body: bytes):
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED, compresslevel=9) as z:
        z.writestr(ENTRY, body)
    return path


def _bounded(path) -> tuple[str, int]:
    tracemalloc.start()
    try:
        with pytest.raises(ModelError) as got:
            model_document_text(path)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    message = str(got.value)
    assert str(path) in message and "\n" not in message and "Traceback" not in message
    return message, peak


def test_a_decompression_bomb_is_refused_before_it_is_inflated(tmp_path):
    body = json.dumps(_program([])).encode()
    path = _archive(tmp_path / "ws.pt2", body[:-1] + b" " * (250 * 2**20) + b"}")
    assert path.stat().st_size < 400_000
    message, peak = _bounded(path)
    assert "more than the 64 MB" in message and peak < 32 * 2**20


def test_a_smaller_bomb_is_refused_by_its_ratio(tmp_path):
    body = json.dumps(_program([])).encode()
    path = _archive(tmp_path / "ratio.pt2", body[:-1] + b" " * (40 * 2**20) + b"}")
    message, peak = _bounded(path)
    assert "decompression bomb" in message and peak < 32 * 2**20


def test_json_nested_too_deeply_is_one_message(tmp_path):
    deep = "[" * 100_000 + "]" * 100_000
    text = '{"graph_module": {"graph": {"nodes": [{"target": "x", "inputs": [{"name": "a", "arg": {"as_ints": '
    path = _archive(tmp_path / "deep.pt2", (text + deep + "}}]}]}}}").encode())
    message, _ = _bounded(path)
    assert "nested too deeply" in message


def test_long_arguments_render_a_few_values(tmp_path):
    """20 nodes with a 40 000-value list each: 5.6 MB of document before, a line each now."""
    node = {
        "target": "torch.ops.aten.add.Tensor",
        "name": "n",
        "metadata": {},
        "outputs": [],
        "inputs": [{"name": "alpha", "arg": {"as_ints": list(range(100_000, 140_000))}}],
    }
    path = _archive(tmp_path / "amp.pt2", json.dumps(_program([node] * 20)).encode())
    text = model_document_text(path)
    assert len(text) < 20_000 and "… 40000 values]" in text

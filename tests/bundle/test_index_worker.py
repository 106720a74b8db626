"""A large ``index.json`` is parsed by a worker process (``bundle/index_load.py``): the loaded
bundle must be exactly the one an in-process parse gives, damaged indexes must be reported
with the same messages, and a worker that cannot run must cost nothing but the saving."""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import pytest

from tvm_explorer.bundle import index_load
from tvm_explorer.bundle.reader import Bundle
from tvm_explorer.errors import BundleError


@pytest.fixture(scope="module")
def good(gt_model, bundles) -> Path:
    return bundles.get(gt_model, "c")


def _snapshot(parsed: index_load.ParsedIndex):
    docs = {}
    for path, got in parsed.documents.items():
        docs[path] = str(got) if isinstance(got, BundleError) else (got[1], list(got[0].ranges))
    return parsed.layers, parsed.origin_sets, docs


def _both(data: bytes, where: Path):
    """(in-process result or message, worker result or message)."""
    out = []
    for parse in (index_load.parse_index, index_load._parse_in_worker):
        try:
            got = parse(data, where)
            assert got is not None, "the worker failed"
            out.append(_snapshot(got))
        except BundleError as err:
            out.append(str(err))
    return out


def test_worker_parses_a_real_index_exactly_as_in_process(good):
    data = (good / "index.json").read_bytes()
    here, worker = _both(data, good / "index.json")
    assert here == worker
    assert sum(len(ranges) for _length, ranges in here[2].values()) > 100


def _damaged(good: Path, change) -> bytes:
    index = json.loads((good / "index.json").read_text())
    change(index)
    return json.dumps(index).encode()


def _first_doc(index) -> dict:
    return next(d for d in index["documents"].values() if d["ranges"])


DAMAGE = {
    "not json": lambda good: b"nope",
    "not utf-8": lambda good: b"\xff\xfe{}",
    "deeply nested": lambda good: b"[" * 100000 + b"]" * 100000,
    "schema": lambda good: _damaged(good, lambda i: i.update(schema_version="1")),
    "documents a list": lambda good: _damaged(good, lambda i: i.update(documents=[])),
    "range past the end": lambda good: _damaged(good, lambda i: _first_doc(i)["ranges"][0].__setitem__(1, 10**9)),
    "range string offsets": lambda good: _damaged(good, lambda i: _first_doc(i)["ranges"][0].__setitem__(0, "0")),
    "range short": lambda good: _damaged(good, lambda i: _first_doc(i)["ranges"].__setitem__(0, [1, 2])),
    "mixed links": lambda good: _damaged(good, lambda i: _first_doc(i)["ranges"][0].append("a link")),
    "huge number": lambda good: _damaged(good, lambda i: _first_doc(i)["ranges"][0].__setitem__(2, 2**70)),
    "no length": lambda good: _damaged(good, lambda i: _first_doc(i).pop("length")),
}


@pytest.mark.parametrize("name", sorted(DAMAGE))
def test_worker_reports_damage_as_in_process(good, name):
    here, worker = _both(DAMAGE[name](good), good / "index.json")
    assert here == worker
    if isinstance(here, tuple) and name != "mixed links":
        assert any(isinstance(v, str) for v in here[2].values()), "the damage was not noticed"


def test_a_worker_that_cannot_run_costs_only_the_saving(good, monkeypatch, tmp_path):
    data = (good / "index.json").read_bytes()
    expected = _snapshot(index_load.parse_index(data, good / "index.json"))
    monkeypatch.setattr(index_load, "WORKER_MIN_BYTES", 0)
    for executable in (str(tmp_path / "missing-python"), shutil.which("echo"), shutil.which("false")):
        monkeypatch.setattr(sys, "executable", executable)
        assert index_load._parse_in_worker(data, good / "index.json") is None
        assert _snapshot(index_load.load_index(data, good / "index.json")) == expected


def test_a_bundle_loaded_through_the_worker_answers_the_same(good, monkeypatch):
    here = Bundle(good)
    monkeypatch.setattr(index_load, "WORKER_MIN_BYTES", 0)
    through_worker = Bundle(good)
    assert here.layers == through_worker.layers and here.origin_sets == through_worker.origin_sets
    for doc in here.documents:
        assert list(here.index(doc.path).ranges) == list(through_worker.index(doc.path).ranges)
        assert here.index(doc.path).by_key("x") == through_worker.index(doc.path).by_key("x")


def _fake_python(tmp_path: Path, name: str, body: str) -> str:
    """An executable standing in for ``sys.executable`` (``$REAL`` runs the real one)."""
    script = tmp_path / name
    script.write_text(f"#!/bin/sh\nREAL={sys.executable}\n{body}\n")
    script.chmod(0o755)
    return str(script)


@pytest.mark.parametrize("how", ["stops short", "says more documents", "hangs"])
def test_a_worker_answering_wrong_or_never_costs_only_the_saving(good, monkeypatch, tmp_path, how):
    """The answer is streamed in as the worker converts: one cut off, one claiming documents it
    never sent, or a worker that never answers (stopped after ``WORKER_TIMEOUT_S``) is parsed
    here instead, with the same result."""
    data = (good / "index.json").read_bytes()
    expected = _snapshot(index_load.parse_index(data, good / "index.json"))
    body = {
        "stops short": '"$REAL" "$@" | head -c 3000',
        "says more documents": '"$REAL" "$@" | LC_ALL=C sed \'s/{"end": [0-9]*}$/{"end": 999999}/\'',
        "hangs": "exec sleep 60",
    }[how]
    monkeypatch.setattr(sys, "executable", _fake_python(tmp_path, "python", body))
    monkeypatch.setattr(index_load, "WORKER_TIMEOUT_S", 1.0)
    assert index_load._parse_in_worker(data, good / "index.json") is None
    monkeypatch.setattr(index_load, "WORKER_MIN_BYTES", 0)
    assert _snapshot(index_load.load_index(data, good / "index.json")) == expected


def test_prepare_runs_on_each_converted_document_in_both_ways(good, monkeypatch):
    """``prepare`` (the layer map's parts, in the server) sees every converted document,
    whether parsed here or streamed in from the worker; when it fails, nothing is lost but
    its parts."""
    data = (good / "index.json").read_bytes()
    where = good / "index.json"
    seen_sets = []

    def prepare(origin_sets):
        seen_sets.append(origin_sets)
        return lambda index: len(index)

    here = index_load.parse_index(data, where, prepare)
    worker = index_load._parse_in_worker(data, where, prepare)
    assert worker is not None
    for parsed in (here, worker):
        want = {p: len(got[0]) for p, got in parsed.documents.items() if not isinstance(got, BundleError)}
        assert parsed.parts == want and len(want) > 3
        assert parsed.prepared is not None
    assert seen_sets[0] == seen_sets[1] == json.loads(data)["origin_sets"]

    def fails_on_one(origin_sets):
        return lambda index: 1 // (len(index) % 2)  # ZeroDivisionError for even lengths

    for parse in (index_load.parse_index, index_load._parse_in_worker):
        got = parse(data, where, fails_on_one)
        assert _snapshot(got) == _snapshot(here)
        assert set(got.parts) == {p for p, v in here.parts.items() if v % 2}

    def refuses(origin_sets):
        raise ValueError("no")

    got = index_load.parse_index(data, where, refuses)
    assert _snapshot(got) == _snapshot(here) and got.prepared is None and got.parts == {}

"""Printing after the compile in forked workers writes exactly the bundle inline printing
writes, and a worker that dies or hangs costs time, never content."""

from __future__ import annotations

import json
import os
import signal
import time
from pathlib import Path

import pytest

import tvm_explorer.capture.parallel_print as pp
from conftest import MODELS
from tvm_explorer.app.compile import compile_model


def _files(bundle: Path) -> dict[str, bytes]:
    """Every file of a bundle by relative path; the manifest without its creation time, costs.json
    without its measured compile times, memory.json without its analysis time."""
    out = {}
    for path in sorted(p for p in bundle.rglob("*") if p.is_file()):
        data = path.read_bytes()
        if path.name == "manifest.json":
            manifest = json.loads(data)
            manifest.pop("created", None)
            data = json.dumps(manifest, sort_keys=True).encode()
        elif path.name == "costs.json":  # compile times are measured: the rest must match
            costs = json.loads(data)
            costs.get("totals", {}).pop("compile_ms", None)
            for entry in costs.get("passes", ()):
                entry.pop("ms", None)
            data = json.dumps(costs, sort_keys=True).encode()
        elif path.name == "memory.json":  # so is the analysis's own time
            memory = json.loads(data)
            memory.pop("analysis_ms", None)
            data = json.dumps(memory, sort_keys=True).encode()
        out[str(path.relative_to(bundle))] = data
    return out


def _assert_same_bundle(a: Path, b: Path) -> None:
    fa, fb = _files(a), _files(b)
    assert fa.keys() == fb.keys()
    differing = [name for name in fa if fa[name] != fb[name]]
    assert not differing, f"files differ between {a.name} and {b.name}: {differing}"
    assert "index.json" in fa and any(name.startswith("tir/") for name in fa)


class _Spy:
    """Counts workers started and shares the parent had to print again."""

    def __init__(self, monkeypatch):
        self.started = 0
        self.failed = 0
        start, collect = pp._start_worker, pp._collect

        def counting_start(share):
            self.started += 1
            return start(share)

        def counting_collect(child, deadline):
            got = collect(child, deadline)
            self.failed += got is None
            return got

        monkeypatch.setattr(pp, "_start_worker", counting_start)
        monkeypatch.setattr(pp, "_collect", counting_collect)


def _compile(monkeypatch, model: Path, out: Path, target: str, workers: int) -> Path:
    monkeypatch.setenv(pp.ENV_WORKERS, str(workers))
    compile_model(model, out, target)
    return out


@pytest.fixture(scope="module")
def inline_bundles(tmp_path_factory, gt_model):
    """Reference bundles printed inline during the compile (``TVMX_PRINT_WORKERS=0``)."""
    root = tmp_path_factory.mktemp("inline")
    mp = pytest.MonkeyPatch()
    try:
        out = {
            "small_cnn_fp32.c": _compile(mp, MODELS / "small_cnn_fp32.tflite", root / "cnn.c.bundle", "c", 0),
            "gt.cuda": _compile(mp, gt_model, root / "gt.cuda.bundle", "cuda", 0),
        }
    finally:
        mp.undo()
    return out


@pytest.mark.parametrize("workers", [2, 1])
def test_printing_after_the_compile_writes_the_inline_bundle(inline_bundles, monkeypatch, tmp_path, workers):
    spy = _Spy(monkeypatch)
    out = _compile(monkeypatch, MODELS / "small_cnn_fp32.tflite", tmp_path / "cnn.bundle", "c", workers)
    _assert_same_bundle(inline_bundles["small_cnn_fp32.c"], out)
    assert spy.started == workers - 1 and spy.failed == 0


def test_parallel_cuda_bundle_keeps_schedule_links_as_they_were(inline_bundles, gt_model, monkeypatch, tmp_path):
    # Documents before the schedule rules ran must not link to traces recorded later.
    spy = _Spy(monkeypatch)
    out = _compile(monkeypatch, gt_model, tmp_path / "gt.cuda.bundle", "cuda", 2)
    _assert_same_bundle(inline_bundles["gt.cuda"], out)
    assert spy.started == 1 and spy.failed == 0


def test_killed_workers_still_give_the_complete_bundle(inline_bundles, monkeypatch, tmp_path):
    parent = os.getpid()
    print_share = pp._print_share

    def dying_in_workers(jobs):
        if os.getpid() != parent:
            os.kill(os.getpid(), signal.SIGKILL)
        return print_share(jobs)

    monkeypatch.setattr(pp, "_print_share", dying_in_workers)
    spy = _Spy(monkeypatch)
    out = _compile(monkeypatch, MODELS / "small_cnn_fp32.tflite", tmp_path / "cnn.bundle", "c", 3)
    assert spy.started == 2 and spy.failed == 2
    _assert_same_bundle(inline_bundles["small_cnn_fp32.c"], out)


def test_a_hung_worker_is_ended_and_its_share_printed_by_the_parent(inline_bundles, monkeypatch, tmp_path):
    parent = os.getpid()
    print_share = pp._print_share
    pids = []

    def hanging_in_workers(jobs):
        if os.getpid() != parent:
            time.sleep(600)
        return print_share(jobs)

    start = pp._start_worker

    def remembering_start(share):
        pid, fd = start(share)
        pids.append(pid)
        return pid, fd

    monkeypatch.setattr(pp, "_print_share", hanging_in_workers)
    monkeypatch.setattr(pp, "_start_worker", remembering_start)
    monkeypatch.setattr(pp, "WORKER_GRACE_SECONDS", 0.5)
    started = time.monotonic()
    out = _compile(monkeypatch, MODELS / "small_cnn_fp32.tflite", tmp_path / "cnn.bundle", "c", 2)
    assert time.monotonic() - started < 300
    _assert_same_bundle(inline_bundles["small_cnn_fp32.c"], out)
    assert len(pids) == 1
    with pytest.raises(ChildProcessError):  # ended and reaped: no zombie, no stray process
        os.waitpid(pids[0], os.WNOHANG)


@pytest.mark.parametrize("workers", [0, 2])
def test_functions_rebuilt_from_the_same_parts_are_not_printed_again(
    inline_bundles, gt_model, monkeypatch, tmp_path, workers
):
    # Reference: the same capture with the reuse defeated (every function's content key
    # unique, so every rebuilt function is printed again): the bundles must be identical.
    import itertools

    import tvm_explorer.capture.printer as printer

    sessions = []
    monkeypatch.setenv(pp.ENV_WORKERS, str(workers))
    compile_model(gt_model, tmp_path / "reused.bundle", "cuda", on_session=sessions.append)
    if workers == 0:
        assert sessions[0].printer.reused > 0  # the case happens in a real compile
    fresh = itertools.count()
    monkeypatch.setattr(printer, "content_key", lambda func: ("never the same", next(fresh)))
    monkeypatch.setattr(pp, "content_key", lambda func: ("never the same", next(fresh)))
    out = _compile(monkeypatch, gt_model, tmp_path / "printed.bundle", "cuda", workers)
    _assert_same_bundle(inline_bundles["gt.cuda"], out)
    _assert_same_bundle(tmp_path / "reused.bundle", out)

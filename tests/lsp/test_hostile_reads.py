"""Issue 26, reads outside / races / resources, against the real server process: model
documents of FIFOs and devices, a layer's source file of 384 MiB without a newline, oversized
numerics/costs/bisect sections, and a bundle of thousands of documents under a low limit of
open files. Memory is the server's peak resident size (``VmHWM``)."""

from __future__ import annotations

import json
import os
import shutil
import sys
import time
from pathlib import Path

from tests.conftest import run_cli
from tests.timing_goals import record

from .fake_bundle import write_fake_bundle
from .hostile import RawServer, write_many_documents_bundle

MODELS = Path(__file__).resolve().parents[1] / "models"
SECTIONS = ("numerics.json", "costs.json", "bisect.json")


def _request(srv: RawServer, method: str, params: dict) -> int:
    return srv.request(method, params)


def _replies(srv: RawServer, ids, timeout: float) -> dict:
    """The replies to every request of ``ids``, by id, in whatever order they come."""
    got: dict = {}
    deadline = time.monotonic() + timeout
    while len(got) < len(ids):
        msg = srv.reply(
            match=lambda m: "method" not in m and m.get("id") in ids, timeout=max(0.1, deadline - time.monotonic())
        )
        got[msg["id"]] = msg
    return got


def _hover(srv: RawServer, path: Path, line: int, character: int) -> dict:
    return srv.reply(
        srv.request(
            "textDocument/hover",
            {"textDocument": {"uri": path.as_uri()}, "position": {"line": line, "character": character}},
        )
    )


def test_model_documents_of_fifos_and_devices_are_refused_at_once(tmp_path):
    """Item 6: eight FIFOs named ``*.tflite`` used to block every worker thread (the real
    model asked for next was never answered); ``model.tflite -> /dev/zero`` grew the server
    without bound; a file over the cap is refused before it is read."""
    ws = tmp_path / "ws"
    ws.mkdir()
    # every kind the model viewer opens (.onnx and .pt2 too)
    fifos = [ws / f"fifo{i}.{('tflite', 'onnx', 'pt2')[i % 3]}" for i in range(8)]
    for fifo in fifos:
        os.mkfifo(fifo)
    (ws / "zero.tflite").symlink_to("/dev/zero")
    with open(ws / "huge.tflite", "wb") as f:
        f.truncate(300 * 2**20)
    real = shutil.copy(MODELS / "small_cnn_fp32.tflite", ws / "real.tflite")
    srv = RawServer()
    try:
        srv.initialize(ws)
        base = srv.peak_mib()
        ids = {
            _request(srv, "tvmExplorer/modelDocument", {"uri": p.as_uri()}): p
            for p in [*fifos, ws / "zero.tflite", ws / "huge.tflite"]
        }
        real_id = _request(srv, "tvmExplorer/modelDocument", {"uri": Path(real).as_uri()})
        got = _replies(srv, [*ids, real_id], timeout=30)
        assert "CONV_2D" in got[real_id]["result"]["text"], got[real_id]
        for msg_id, path in ids.items():
            error = got[msg_id]["error"]["message"]
            assert str(path) in error, error
            if path.name == "huge.tflite":
                assert "300 MiB, more than the 256 MiB" in error, error
            else:
                assert "not a regular file" in error, error
            assert "\n" not in error and "Traceback" not in error
        assert srv.peak_mib() - base < 100, (base, srv.peak_mib())
    finally:
        srv.close()


def test_compile_of_a_fifo_is_one_message(tmp_path):
    """Item 6, the CLI side (the same reader): a FIFO model is refused, not read forever."""

    fifo = tmp_path / "m.tflite"
    os.mkfifo(fifo)
    proc = run_cli("compile", str(fifo), "-o", str(tmp_path / "out"), timeout=60)
    assert proc.returncode == 2, proc.stderr
    assert (
        proc.stderr.strip() == f"tvm-explorer: error: {fifo}: is not a regular file (a FIFO, "
        "a device or a socket), not a TFLite model"
    ), proc.stderr


def _with_source(root: Path, file: Path, line: int) -> None:
    index = json.loads((root / "index.json").read_text())
    index["layers"][0]["source"] = {"file": str(file), "line": line}
    (root / "index.json").write_text(json.dumps(index))


def test_definition_reads_a_source_file_bounded_and_off_the_event_loop(tmp_path):
    """Item 7: a layer's source file of 384 MiB without a newline was read whole on the event
    loop (memory of its size, twice; every other request waited). Now at most 64 MiB is
    scanned, in 1 MiB pieces, on a worker thread; a real line deep in a file is still
    found."""
    ws = tmp_path / "ws"
    huge_src = tmp_path / "huge.py"
    with open(huge_src, "wb") as f:
        f.truncate(384 * 2**20)
    deep_src = tmp_path / "deep.py"
    deep_src.write_bytes(b"#\n" * (2 * 2**20) + b"    y = self.conv(x)\n")
    huge = write_fake_bundle(ws / "a-huge")
    _with_source(huge, huge_src, 5)
    deep = write_fake_bundle(ws / "b-deep")
    _with_source(deep, deep_src, 2 * 2**20 + 1)
    other = write_fake_bundle(ws / "c-other")
    srv = RawServer()
    try:
        srv.initialize(ws)
        srv.wait_bundles(3)
        assert _hover(srv, other / "relax/000-import.relax", 5, 14).get("result")
        base = srv.peak_mib()
        position = {"line": 5, "character": 4}  # in code/module.c, from layer 0
        t0 = time.monotonic()
        slow = srv.request(
            "textDocument/definition",
            {"textDocument": {"uri": (huge / "code/module.c").as_uri()}, "position": position},
        )
        quick = srv.request(
            "textDocument/hover",
            {
                "textDocument": {"uri": (other / "relax/000-import.relax").as_uri()},
                "position": {"line": 5, "character": 14},
            },
        )
        hover = srv.reply(quick)
        hover_s = time.monotonic() - t0
        assert hover.get("result"), hover
        found = _replies(srv, [slow], timeout=60)[slow]["result"]
        assert [loc["uri"] for loc in found] == [(huge / "model.tflgraph").as_uri()], found
        assert srv.peak_mib() - base < 100, (base, srv.peak_mib())
        # Goal 3 s (bench/timing_goals.py); asserted: 10 s, beside a definition that reads 64 MiB.
        record("lsp: hover while a definition scans a 384 MiB source file", hover_s, 3.0)
        assert hover_s < 10, hover_s
        found = srv.reply(
            srv.request(
                "textDocument/definition",
                {"textDocument": {"uri": (deep / "code/module.c").as_uri()}, "position": position},
            )
        )
        source = [loc for loc in found["result"] if loc["uri"] == deep_src.as_uri()]
        assert source and source[0]["range"] == {
            "start": {"line": 2 * 2**20, "character": 4},
            "end": {"line": 2 * 2**20, "character": 20},
        }, found
    finally:
        srv.close()


def _big_section(path: Path, mib: int) -> None:
    """A JSON list of small objects of about ``mib`` MiB (what costs most memory parsed)."""
    item = '{"subgraph": 0, "op_index": 1, "cosine": 0.5},'
    count = mib * 2**20 // len(item)
    path.write_text('{"layers": [' + item * (count - 1) + item[:-1] + "]}")


def test_oversized_sections_are_left_out_and_the_rest_answers(tmp_path):
    """Item 8: numerics.json, costs.json and bisect.json were outside the bundle budget (a
    114 MiB numerics.json took the server to 3 GB); each over 16 MiB is now reported by name
    without being read, and the bundle's documents still answer."""
    ws = tmp_path / "ws"
    root = write_fake_bundle(ws / "sections")
    for name in SECTIONS:
        _big_section(root / name, 24)
    srv = RawServer()
    try:
        srv.initialize(ws)
        bundles = srv.wait_bundles(1, timeout=120)
        problems = bundles[0]["problems"]
        for name in SECTIONS:
            assert [p for p in problems if str(root / name) in p and "24 MiB, more than the 16 MiB" in p], problems
        assert _hover(srv, root / "relax/000-import.relax", 5, 14).get("result")
        assert srv.peak_mib() < 250, srv.peak_mib()
    finally:
        srv.close()


# The CLI is started by a small launcher so that its peak is its own: a child forked from
# this test process (hundreds of MiB once TVM is imported) counts the parent's pages in its
# ru_maxrss until it execs.
_LAUNCHER = """
import os, resource, subprocess, sys
proc = subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
sys.stderr.buffer.write(proc.stderr)
os.write(int(os.environ.pop("PEAK_FD")), str(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss).encode())
sys.exit(proc.returncode)
"""


def _run_measured(*args) -> tuple[int, str, float]:
    """Run the CLI; (exit status, stderr, its peak resident MiB)."""
    import subprocess

    read_end, write_end = os.pipe()
    proc = subprocess.Popen(
        [sys.executable, "-c", _LAUNCHER, sys.executable, "-m", "tvm_explorer", *map(str, args)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        pass_fds=(write_end,),
        env={**os.environ, "PEAK_FD": str(write_end)},
    )
    os.close(write_end)
    err = proc.stderr.read()
    proc.wait()
    with os.fdopen(read_end, "rb") as peak:
        kib = int(peak.read() or 0)
    return proc.returncode, err, kib / 1024


def test_cli_refuses_oversized_sections_by_name_in_bounded_memory(tmp_path):
    """Item 8, the CLI: ``numerics`` and ``costs`` name the oversized file; ``coverage``
    answers from the rest of the bundle and warns."""
    root = write_fake_bundle(tmp_path / "b")
    for name in SECTIONS:
        _big_section(root / name, 24)
    for command, name in (("numerics", "numerics.json"), ("costs", "costs.json")):
        status, err, peak = _run_measured(command, root)
        assert status == 2, err
        assert err == (
            f"tvm-explorer: error: {root / name}: {'numerics' if command == 'numerics' else 'costs file'}"
            f" is 24 MiB, more than the 16 MiB a {name} may have; it is left out\n"
        ), err
        assert peak < 200, (command, peak)
    status, err, peak = _run_measured("coverage", root)
    assert status == 0, err
    assert [line for line in err.splitlines() if "warning" in line and "16 MiB" in line].__len__() == 2, err
    assert peak < 200, peak


def _limited_server(nofile: int) -> list[str]:
    """The server command, with its open-files limit (soft and hard) lowered to ``nofile``
    before it starts (it raises the soft limit to the hard one)."""
    code = (
        "import resource, runpy, sys; "
        f"resource.setrlimit(resource.RLIMIT_NOFILE, ({nofile}, {nofile})); "
        "sys.argv = ['tvm-explorer', 'serve']; runpy.run_module('tvm_explorer', run_name='__main__')"
    )
    return [sys.executable, "-c", code]


def test_a_bundle_of_thousands_of_documents_loads_under_a_low_descriptor_limit(tmp_path):
    """Item 9: the server kept every document of a bundle open; with more documents than its
    descriptor limit the load failed ("cannot read manifest (Too many open files)") and was
    retried on each rescan. Now a bundle keeps at most a sixteenth of the limit open (32),
    reads the others again by name (checked to be the same file), and both bundles answer."""
    ws = tmp_path / "ws"
    many = write_many_documents_bundle(ws / "a-many", 3000)
    index = json.loads((many / "index.json").read_text())
    for rel, entry in index["documents"].items():
        if rel.startswith("tir/many/"):
            entry["ranges"] = [[2, 10, 1, "stmt", f"store:{rel}"]]  # from layer 0
    (many / "index.json").write_text(json.dumps(index))
    tiny = write_fake_bundle(ws / "b-tiny")
    srv = RawServer(cmd=_limited_server(512))
    try:
        srv.initialize(ws)
        bundles = srv.wait_bundles(2, timeout=120)
        assert all(not b["problems"] for b in bundles), bundles
        assert _hover(srv, tiny / "relax/000-import.relax", 5, 14).get("result")
        for i in (0, 1500, 2999, 7):
            got = _hover(srv, many / f"tir/many/{i:06d}.tir", 0, 4)
            assert "`conv1`" in got["result"]["contents"]["value"], (i, got)
        fds = len(os.listdir(f"/proc/{srv.proc.pid}/fd"))
        assert fds < 200, fds
    finally:
        srv.close()
    assert "Too many open files" not in srv.stderr()

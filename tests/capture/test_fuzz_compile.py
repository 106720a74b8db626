"""Fuzzing `tvm-explorer compile` with mutated real models.

Byte-level mutations (flips, truncations, splices, insertions) of small_cnn_fp32 and
sine_float, and structure-level mutations that keep the flatbuffer valid but change its
fields (shapes, indices, options, constant data, opcodes, types; built with
``tests.tflite_builder``). In process, the loader must return or raise ModelError.
Through the real CLI (each compile in its forked child, with a timeout), every case must end
with a good bundle, or exit non-zero with one message naming the file and leave nothing
behind; a TVM crash must be reported as such.

Bounded by default; ``TVMX_FUZZ_LONG=1`` runs the long campaign (see docs/reliability.md).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tests import tflite_builder as B

from tvm_explorer.bundle.reader import Bundle
from tvm_explorer.errors import ModelError
from tvm_explorer.frontends.tflite.loader import load_model

LONG = os.environ.get("TVMX_FUZZ_LONG") == "1"
MODELS = Path(__file__).resolve().parents[1] / "models"
BASES = {name: (MODELS / f"{name}.tflite").read_bytes() for name in ("small_cnn_fp32", "sine_float")}
WORKER = Path(__file__).resolve().parents[1] / "fuzz_worker.py"
CASE_TIMEOUT = 120  # seconds the worker may take for one compile before the test calls it a hang
STATS: Counter = Counter()


def _settings(examples: int, long_examples: int):
    return settings(
        max_examples=long_examples if LONG else examples,
        deadline=None,
        derandomize=not LONG,
        database=None,
        suppress_health_check=list(HealthCheck),
    )


# -- mutations ------------------------------------------------------------------------------
@st.composite
def byte_mutants(draw) -> bytes:
    data = bytearray(BASES[draw(st.sampled_from(sorted(BASES)))])
    for _ in range(draw(st.integers(1, 3))):
        kind = draw(st.sampled_from(["flip", "set", "truncate", "splice", "insert", "header"]))
        n = len(data)
        if n == 0:
            break
        if kind == "flip":
            i = draw(st.integers(0, n - 1))
            data[i] ^= 1 << draw(st.integers(0, 7))
        elif kind == "set":
            i = draw(st.integers(0, n - 1))
            data[i] = draw(st.sampled_from([0, 1, 0x7F, 0x80, 0xFF]))
        elif kind == "truncate":
            del data[draw(st.integers(0, n - 1)) :]
        elif kind == "splice":
            other = BASES[draw(st.sampled_from(sorted(BASES)))]
            i, j = draw(st.integers(0, n - 1)), draw(st.integers(0, len(other) - 1))
            length = draw(st.integers(1, 512))
            data[i : i + draw(st.integers(0, 512))] = other[j : j + length]
        elif kind == "insert":
            i = draw(st.integers(0, n))
            data[i:i] = draw(st.binary(min_size=1, max_size=64))
        else:  # the root table and vtables live in the first bytes
            i = draw(st.integers(0, min(n, 256) - 1))
            data[i] = draw(st.integers(0, 255))
    return bytes(data)


def _graph() -> B.GraphBuilder:
    return B.conv_add_relu_dense_graph(seed=0)


OPCODES = [
    "CONV_2D",
    "ADD",
    "RELU",
    "RESHAPE",
    "FULLY_CONNECTED",
    "SOFTMAX",
    "MAX_POOL_2D",
    "MUL",
    "DEPTHWISE_CONV_2D",
    "CONCATENATION",
    "TRANSPOSE",
    "MEAN",
    "PAD",
    "SQUEEZE",
    "TANH",
    "LOGISTIC",
    "DENSIFY",
    "DEQUANTIZE",
    "CUSTOM",
    "BROADCAST_TO",
    "TILE",
    "GATHER",
]
DIMS = [0, 1, 2, 3, 5, 1000, 2**20, 2**31 - 1, -1, -7]


@st.composite
def structure_mutants(draw) -> bytes | None:
    """A model built with valid flatbuffer structure but changed fields."""
    g = _graph()
    for _ in range(draw(st.integers(1, 3))):
        kind = draw(
            st.sampled_from(
                ["values", "dim", "rank", "input", "output", "option", "data", "opcode", "dtype", "graph_io"]
            )
        )
        t = g.tensors[draw(st.integers(0, len(g.tensors) - 1))]
        op = g.ops[draw(st.integers(0, len(g.ops) - 1))]
        if kind == "values":  # same sizes, any bits (NaN, inf, denormals): should compile
            const = [c for c in g.tensors if c.data is not None]
            c = const[draw(st.integers(0, len(const) - 1))]
            c.data = draw(st.binary(min_size=len(c.data), max_size=len(c.data)))
        elif kind == "dim" and t.shape:
            t.shape[draw(st.integers(0, len(t.shape) - 1))] = draw(st.sampled_from(DIMS))
        elif kind == "rank":
            t.shape = t.shape[: draw(st.integers(0, len(t.shape)))] + [1] * draw(st.integers(0, 6))
        elif kind == "input" and op.inputs:
            op.inputs[draw(st.integers(0, len(op.inputs) - 1))] = draw(st.integers(-2, len(g.tensors) + 2))
        elif kind == "output":
            op.outputs = [draw(st.integers(0, len(g.tensors) + 1))]
        elif kind == "option" and op.options:
            name, values = op.options
            if values:
                key = draw(st.sampled_from(sorted(values)))
                values = {
                    **values,
                    key: draw(st.sampled_from([0, -1, 2, 7, 100, 2**31 - 1]))
                    if not isinstance(values[key], float)
                    else draw(st.sampled_from([0.0, -1.0, float("nan"), 1e30])),
                }
                op.options = (name, values)
        elif kind == "data" and t.data is not None:
            t.data = (t.data + bytes(64))[: draw(st.integers(0, len(t.data) + 64))]
        elif kind == "opcode":
            op.opcode = draw(st.sampled_from(OPCODES))
        elif kind == "dtype":
            t.dtype = "int32"
        elif kind == "graph_io":
            target = g.inputs if draw(st.booleans()) else g.outputs
            target[:] = [draw(st.integers(-1, len(g.tensors) + 1))]
    try:
        return g.build()
    except Exception:  # noqa: BLE001 - the builder itself refused (e.g. negative vector values)
        return None


# -- in process: the loader --------------------------------------------------------------------
def _load(tmp_path: Path, data: bytes) -> bool:
    path = tmp_path / "case.tflite"
    path.write_bytes(data)
    try:
        load_model(path)
    except ModelError as err:
        assert str(err).startswith(f"{path}: "), str(err)
        STATS["loader: rejected"] += 1
        return False
    STATS["loader: accepted"] += 1
    return True


@given(byte_mutants())
@_settings(1500, 20000)
def test_loader_on_byte_mutants(tmp_path_factory, data):
    _load(tmp_path_factory.getbasetemp(), data)


@given(structure_mutants())
@_settings(400, 5000)
def test_loader_on_structure_mutants(tmp_path_factory, data):
    if data is not None:
        _load(tmp_path_factory.getbasetemp(), data)


# -- through the CLI ---------------------------------------------------------------------------
class Worker:
    def __init__(self):
        self.proc = None

    def run(self, *args) -> dict:
        if self.proc is None or self.proc.poll() is not None:
            self.proc = subprocess.Popen(
                [sys.executable, str(WORKER)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
            )
        self.proc.stdin.write(json.dumps([str(a) for a in args]) + "\n")
        self.proc.stdin.flush()
        import select

        ready, _, _ = select.select([self.proc.stdout], [], [], CASE_TIMEOUT)
        if not ready:
            self.proc.kill()
            self.proc = None
            raise AssertionError(f"tvm-explorer {' '.join(map(str, args))} hung")
        return json.loads(self.proc.stdout.readline())

    def close(self):
        if self.proc is not None:
            self.proc.kill()
            self.proc.wait()


@pytest.fixture(scope="module")
def worker():
    w = Worker()
    yield w
    w.close()


def _compile_case(worker: Worker, tmp: Path, data: bytes) -> None:
    model = tmp / "case.tflite"
    out = tmp / "case.bundle"
    shutil.rmtree(out, ignore_errors=True)
    model.write_bytes(data)
    t0 = time.monotonic()
    reply = worker.run("compile", model, "-o", out, "--timeout", "60")
    rc, stderr = reply["rc"], reply["stderr"]
    assert "Traceback" not in stderr, stderr
    assert rc in (0, 2, 3, 4), (rc, stderr)
    if rc == 0:
        Bundle(out).preload()
        STATS["cli: compiled"] += 1
    else:
        lines = [line for line in stderr.strip().split("\n") if line and "Warning" not in line]
        assert len(lines) == 1 and lines[0].startswith("tvm-explorer: error: "), stderr
        assert "case.tflite" in lines[0], lines[0]
        assert not out.exists()
        STATS[{2: "cli: error", 3: "cli: TVM crash reported", 4: "cli: timeout"}[rc]] += 1
    assert not [p for p in tmp.iterdir() if p.name.startswith(".case.bundle.")]
    STATS["cli: seconds"] += time.monotonic() - t0


@given(structure_mutants())
@_settings(30, 600)
def test_cli_on_structure_mutants(worker, tmp_path_factory, data):
    if data is not None:
        _compile_case(worker, tmp_path_factory.getbasetemp(), data)


@given(byte_mutants())
@_settings(15, 400)
def test_cli_on_byte_mutants(worker, tmp_path_factory, data):
    _compile_case(worker, tmp_path_factory.getbasetemp(), data)


def test_report_fuzz_figures(capsys):
    """Prints what the fuzz tests above tried (run with -s to see it)."""
    with capsys.disabled():
        print("\ncompile fuzz:", dict(sorted(STATS.items())))

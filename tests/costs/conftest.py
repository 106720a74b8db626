"""Models and profiled bundles of the costs tests (built and compiled once per session)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from tests.conftest import run_cli


def dominant_dense(path: Path, rows: int = 1, width: int = 1024) -> Path:
    """A graph where one layer dominates by construction: a [rows, width] × width×width
    FULLY_CONNECTED (1024×1024 vector product by default) beside small elementwise operators
    (ADD, RELU, MUL) and a SOFTMAX.

    Operator indices: 0 FULLY_CONNECTED, 1 ADD, 2 RELU, 3 MUL, 4 SOFTMAX.
    """
    from tests.tflite_builder import GraphBuilder

    g = GraphBuilder(seed=3)
    x = g.input("input", [rows, width])
    y = g.fully_connected(x, width, name="big_dense")
    y = g.add(y, g.weights("shift", [width]), name="shift")
    y = g.relu(y, name="act")
    y = g.mul(y, g.weights("scale", [width]), name="scale")
    y = g.softmax(y, name="probs")
    g.output(y)
    path.write_bytes(g.build())
    return path


@pytest.fixture(scope="session")
def dense_model(tmp_path_factory) -> Path:
    return dominant_dense(tmp_path_factory.mktemp("costs-models") / "dominant_dense.tflite")


class Profiled:
    """Profiled bundles, compiled through the real CLI once per (model, target, run)."""

    def __init__(self, root: Path):
        self.root = root
        self.done: dict[tuple, Path] = {}

    def get(self, model: Path, target: str, run: int = 0, repeat: int = 5) -> Path:
        key = (str(model), target, run)
        if key not in self.done:
            out = self.root / f"{model.stem}.{target}.{run}.bundle"
            run_cli("compile", model, "-o", out, "--target", target, "--profile", "--repeat", repeat, check=True)
            self.done[key] = out
        return self.done[key]


@pytest.fixture(scope="session")
def profiled(tmp_path_factory) -> Profiled:
    return Profiled(tmp_path_factory.mktemp("profiled"))


def save_inputs(path: Path, **arrays: np.ndarray) -> Path:
    """An .npz file of named arrays."""
    np.savez(path, **arrays)
    return path


def gpu_dominant_dense(path: Path) -> Path:
    """The dominant-dense graph sized for a GPU, where a 1024×1024 vector product takes a few
    microseconds like its neighbours: a [256, 2048] × 2048×2048 FULLY_CONNECTED (2 GFLOP)
    beside the same small elementwise operators. Operator indices as in ``dominant_dense``."""
    return dominant_dense(path, rows=256, width=2048)


def check_times(costs: dict, plain_factor: float | None = 2.0) -> None:
    """What every profile must satisfy, whatever the clock and device: the dominant
    FULLY_CONNECTED ranks first with more than half the time; layer times (plus the VM
    runtime's) add up to the total within 10 %; shares are time over total; every kernel call
    is counted once (per kernel, its calls' medians are its time; all layers together are the
    calls that served layers); and, if ``plain_factor``, the fastest instrumented run is
    within that factor of the fastest plain run of the whole model: an order of magnitude,
    since both are CPU times of a 2-core machine shared with other tests (TVM's thread pool
    spins on a loaded core); how close they are on a quiet machine is a bench's ratio
    (bench/costs_mobilenet.py prints it: 1.00-1.03)."""
    assert costs["profile"]["status"] == "measured", costs["profile"]
    layers = sorted(costs["layers"], key=lambda lay: -(lay["time_ms"] or 0))
    top = layers[0]
    assert top["opcode"] == "FULLY_CONNECTED" and top["name"] == "big_dense/output", layers
    assert top["share"] > 0.5, layers
    total = costs["total_ms"]
    attributed = sum(lay["time_ms"] for lay in layers) + costs["profile"]["runtime_ms"]
    assert abs(attributed - total) <= 0.10 * total, (attributed, total)
    # Times are kept to 0.1 µs, so on a sub-millisecond model time over total drifts by up to
    # 1e-4 / total from the share computed before rounding.
    for lay in layers:
        assert lay["share"] == pytest.approx(lay["time_ms"] / total, abs=1e-3 + 1e-4 / total)
    per_kernel: dict[str, float] = {}
    for call in costs["calls"]:
        if not call["builtin"]:
            per_kernel[call["kernel"]] = per_kernel.get(call["kernel"], 0.0) + call["median_ms"]
    kernels = {k["name"]: k for k in costs["kernels"]}
    assert per_kernel, "no kernel call was timed"
    for name, t in per_kernel.items():
        assert kernels[name]["time_ms"] == pytest.approx(t, abs=1e-3)
    call_sum = sum(c["median_ms"] for c in costs["calls"] if c["layers"])
    assert sum(lay["time_ms"] for lay in layers) == pytest.approx(call_sum, rel=1e-3, abs=1e-3)
    if plain_factor is not None:
        fastest, plain = costs["profile"]["total_min_ms"], costs["profile"]["plain_run_min_ms"]
        assert plain / plain_factor <= fastest <= plain * plain_factor, (fastest, plain)

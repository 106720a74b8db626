"""Models and profiled bundles of the costs tests (built and compiled once per session)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from tests.conftest import run_cli


def dominant_dense(path: Path) -> Path:
    """A graph where one layer dominates by construction: a 1024×1024 FULLY_CONNECTED beside
    small elementwise operators (ADD, RELU, MUL) and a SOFTMAX.

    Operator indices: 0 FULLY_CONNECTED, 1 ADD, 2 RELU, 3 MUL, 4 SOFTMAX.
    """
    from tvm_explorer.model.builder import GraphBuilder

    g = GraphBuilder(seed=3)
    x = g.input("input", [1, 1024])
    y = g.fully_connected(x, 1024, name="big_dense")
    y = g.add(y, g.weights("shift", [1024]), name="shift")
    y = g.relu(y, name="act")
    y = g.mul(y, g.weights("scale", [1024]), name="scale")
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
            run_cli("compile", model, "-o", out, "--target", target, "--profile",
                    "--repeat", repeat, check=True)
            self.done[key] = out
        return self.done[key]


@pytest.fixture(scope="session")
def profiled(tmp_path_factory) -> Profiled:
    return Profiled(tmp_path_factory.mktemp("profiled"))


def save_inputs(path: Path, **arrays: np.ndarray) -> Path:
    """An .npz file of named arrays."""
    np.savez(path, **arrays)
    return path

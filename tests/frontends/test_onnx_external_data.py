"""ONNX external data is read from the model's folder, never from the current directory, and
never from outside that folder (issue 26 item 4). Every run is the real CLI started from
another directory than the model's."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import onnx
import pytest
from onnx import TensorProto

from frontends.onnx_graphs import conv_block

WEIGHT_BYTES = 4 * 3 * 3 * 3 * 4  # conv.weight: float32[4, 3, 3, 3]
SECRET = (b"SECRET-" + b"0123456789abcdef" * 40)[: WEIGHT_BYTES + 64]


def _cli(cwd: Path, *args) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "tvm_explorer", *map(str, args)], cwd=cwd, capture_output=True, text=True, timeout=900
    )


@pytest.fixture(scope="module")
def pair(tmp_path_factory) -> Path:
    """The standard pair: model.onnx + model.onnx.data (every initializer external)."""
    folder = tmp_path_factory.mktemp("onnx-pair")
    model = conv_block(folder / "plain.onnx")
    onnx.save_model(
        model,
        str(folder / "model.onnx"),
        save_as_external_data=True,
        all_tensors_to_one_file=True,
        location="model.onnx.data",
        size_threshold=0,
    )
    (folder / "plain.onnx").unlink()
    return folder / "model.onnx"


@pytest.fixture()
def elsewhere(tmp_path) -> Path:
    d = tmp_path / "elsewhere"
    d.mkdir()
    return d


def test_the_standard_pair_compiles_from_another_directory(pair, elsewhere):
    proc = _cli(elsewhere, "compile", pair, "-o", elsewhere / "b", "--progress", "none")
    assert proc.returncode == 0, proc.stderr
    assert (elsewhere / "b" / "manifest.json").is_file()


def test_the_pair_runs_numerics_with_onnxruntime_from_another_directory(pair, elsewhere):
    proc = _cli(
        elsewhere,
        "compile",
        pair,
        "-o",
        elsewhere / "b",
        "--target",
        "llvm",
        "--numerics",
        "--reference",
        pair,
        "--progress",
        "none",
    )
    assert proc.returncode == 0, proc.stderr
    assert "numerics not recorded" not in proc.stdout, proc.stdout
    assert (elsewhere / "b" / "numerics.json").is_file()


def test_the_pair_bisects_from_another_directory(pair, elsewhere):
    proc = _cli(elsewhere, "bisect", pair, "--reference", pair, "--progress", "none", "--json")
    assert proc.returncode == 0, proc.stderr


def _hostile(folder: Path, location: str) -> Path:
    """conv_block whose conv.weight says its bytes are at ``location``."""
    model = conv_block(folder / "hostile.onnx")
    weight = next(t for t in model.graph.initializer if t.name == "conv.weight")
    weight.ClearField("raw_data")
    del weight.float_data[:]
    weight.data_location = TensorProto.EXTERNAL
    for key, value in (("location", location), ("offset", "0"), ("length", str(WEIGHT_BYTES))):
        weight.external_data.add(key=key, value=value)
    onnx.save(model, str(folder / "hostile.onnx"))
    return folder / "hostile.onnx"


@pytest.mark.parametrize("how", ["cwd-relative", "dotdot", "absolute", "symlink-out"])
def test_a_location_outside_the_model_folder_is_refused(tmp_path, how):
    folder, cwd = tmp_path / "model", tmp_path / "home"
    folder.mkdir()
    (cwd / ".ssh").mkdir(parents=True)
    secret = cwd / ".ssh" / "id_rsa"
    secret.write_bytes(SECRET)
    location = {
        "cwd-relative": ".ssh/id_rsa",
        "dotdot": "../home/.ssh/id_rsa",
        "absolute": str(secret),
        "symlink-out": "weights.bin",
    }[how]
    if how == "symlink-out":
        (folder / "weights.bin").symlink_to(secret)
    model = _hostile(folder, location)
    out = cwd / "b"
    proc = _cli(cwd, "compile", model, "-o", out, "--progress", "none")
    errors = [ln for ln in proc.stderr.splitlines() if ln.startswith("tvm-explorer: error:")]
    assert proc.returncode == 2, proc.stderr
    assert len(errors) == 1 and "Traceback" not in proc.stderr, proc.stderr
    assert f"tensor 'conv.weight' keeps its data in {location!r}" in errors[0], errors[0]
    assert not out.exists()  # no bundle, so none of the outside file's bytes in one
    leaked = [
        p
        for p in tmp_path.rglob("*")
        if p.is_file() and not p.is_symlink() and p != secret and b"SECRET-0123" in p.read_bytes()
    ]
    assert not leaked, leaked

"""A .pt2 is data: its pickles never run unless the user says --trust-pickle (issue 26 item 2).

Each hostile archive is a real exported program saved by ``torch.export.save`` and then
rewritten so one entry is a pickle whose ``__reduce__`` creates a marker file (and returns a
valid value, so a trusted load goes on to compile).
"""

from __future__ import annotations

import io
import json
import zipfile
from pathlib import Path

import pytest

torch = pytest.importorskip("torch", reason="PyTorch is not installed (pip install -e '.[torch]')")

from conftest import run_cli  # noqa: E402
from frontends import torch_nets  # noqa: E402

EXIT_UNTRUSTED = 5


class _Payload:
    """Pickles as a call of ``eval``: touches the marker, then evaluates to ``value``."""

    def __init__(self, marker: Path, value: str):
        self.code = f"__import__('pathlib').Path({str(marker)!r}).touch() or {value}"

    def __reduce__(self):
        return (eval, (self.code,))


def _torch_save(obj) -> bytes:
    buffer = io.BytesIO()
    torch.save(obj, buffer)
    return buffer.getvalue()


def _rewrite(src: Path, dst: Path, replace) -> None:
    """Copy the archive, ``replace(name, raw)`` giving each entry's new bytes."""
    with zipfile.ZipFile(src) as zin, zipfile.ZipFile(dst, "w", zipfile.ZIP_STORED) as zout:
        for info in zin.infolist():
            name = info.filename.split("/", 1)[1]
            zout.writestr(info, replace(name, zin.read(info)))


@pytest.fixture(scope="module")
def archives(tmp_path_factory) -> dict:
    root = tmp_path_factory.mktemp("pt2-pickles")
    ep, _ = torch_nets.resnet_program()
    good = root / "resnet.pt2"
    torch.export.save(ep, good)
    marker = root / "MARKER"
    weight = ("torch.nn.Parameter(__import__('torch').full((8, 3, 3, 3), 0.5))")

    def in_weight(name, raw):
        if name == "data/weights/model_weights_config.json":
            config = json.loads(raw)
            config["config"]["stem.weight"]["use_pickle"] = True
            return json.dumps(config).encode()
        if name == "data/weights/weight_0":
            return _torch_save(_Payload(marker, weight))
        return raw

    def in_inputs(name, raw):
        if name == "data/sample_inputs/model.pt":
            return _torch_save(_Payload(marker, "((__import__('torch').zeros(1, 3, 8, 8),), {})"))
        return raw

    out = {"good": good, "marker": marker}
    for key, how in (("weight", in_weight), ("inputs", in_inputs)):
        out[key] = root / f"evil-{key}.pt2"
        _rewrite(good, out[key], how)
    return out


ENTRIES = {"weight": "archive entry data/weights/weight_0 (weight 'stem.weight')",
           "inputs": "archive entry data/sample_inputs/model.pt"}


def _refused(proc, path: Path, which: str) -> None:
    lines = proc.stderr.strip().splitlines()
    errors = [ln for ln in lines if ln.startswith("tvm-explorer: error:")]
    assert proc.returncode == EXIT_UNTRUSTED, proc.stderr
    assert len(errors) == 1 and "Traceback" not in proc.stderr, proc.stderr
    assert f"{path}: {ENTRIES[which]}" in errors[0], errors[0]
    assert "would call builtins.eval" in errors[0] or "would call eval" in errors[0], errors[0]
    assert "--trust-pickle" in errors[0]


@pytest.mark.parametrize("which", ["weight", "inputs"])
def test_compile_refuses_a_pickle_and_runs_nothing(archives, which, tmp_path):
    proc = run_cli("compile", archives[which], "-o", tmp_path / "b", "--progress", "none")
    _refused(proc, archives[which], which)
    assert not archives["marker"].exists()
    assert not (tmp_path / "b").exists()


def test_numerics_reference_refuses_a_pickle(archives, tmp_path):
    proc = run_cli("compile", archives["good"], "-o", tmp_path / "b", "--target", "llvm",
                   "--numerics", "--reference", archives["weight"], "--progress", "none")
    _refused(proc, archives["weight"], "weight")
    assert not archives["marker"].exists()


def test_bisect_refuses_a_pickle(archives):
    proc = run_cli("bisect", archives["weight"], "--progress", "none")
    _refused(proc, archives["weight"], "weight")
    assert not archives["marker"].exists()
    proc = run_cli("bisect", archives["good"], "--reference", archives["inputs"], "--progress", "none")
    _refused(proc, archives["inputs"], "inputs")
    assert not archives["marker"].exists()


def test_a_normal_pt2_still_compiles(archives, tmp_path):
    proc = run_cli("compile", archives["good"], "-o", tmp_path / "b", "--progress", "none")
    assert proc.returncode == 0, proc.stderr
    assert (tmp_path / "b" / "manifest.json").is_file()
    assert not archives["marker"].exists()


def test_trust_pickle_loads_the_trusted_archive(archives, tmp_path):
    marker = archives["marker"]
    try:
        proc = run_cli("compile", archives["weight"], "-o", tmp_path / "b", "--progress", "none",
                       "--trust-pickle")
        assert proc.returncode == 0, proc.stderr
        assert marker.exists()  # the user's choice: the pickle ran
        assert (tmp_path / "b" / "manifest.json").is_file()
    finally:
        marker.unlink(missing_ok=True)

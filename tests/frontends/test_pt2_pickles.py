"""A .pt2 is data: its pickles never run unless the user says --trust-pickle (issue 26 item 2).

Each hostile archive (``hostile_pt2.py``) is a real exported program saved by
``torch.export.save`` and then rewritten so one entry is a pickle whose ``__reduce__`` creates
a marker file (and returns a valid value, so a trusted load goes on to compile).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from numerics.runs import compile_llvm

torch = pytest.importorskip("torch", reason="PyTorch is not installed (pip install -e '.[torch]')")

from conftest import run_cli  # noqa: E402
from frontends import hostile_pt2, torch_nets  # noqa: E402

EXIT_UNTRUSTED = 5


@pytest.fixture(scope="module")
def archives(tmp_path_factory) -> dict:
    root = tmp_path_factory.mktemp("pt2-pickles")
    ep, _ = torch_nets.resnet_program()
    good = root / "resnet.pt2"
    torch.export.save(ep, good)
    out = {"good": good, "marker": root / "MARKER"}
    for entry in ("weight", "inputs"):
        out[entry] = root / f"evil-{entry}.pt2"
        hostile_pt2.rewrite(good, out[entry], out["marker"], entry)
    return out


ENTRIES = {
    "weight": "archive entry data/weights/weight_0 (weight 'stem.weight')",
    "inputs": "archive entry data/sample_inputs/model.pt",
}


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
    proc = compile_llvm(
        archives["good"], tmp_path / "b", "--numerics", "--reference", archives["weight"], "--progress", "none"
    )
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
        proc = run_cli("compile", archives["weight"], "-o", tmp_path / "b", "--progress", "none", "--trust-pickle")
        assert proc.returncode == 0, proc.stderr
        assert marker.exists()  # the user's choice: the pickle ran
        assert (tmp_path / "b" / "manifest.json").is_file()
    finally:
        marker.unlink(missing_ok=True)


def test_compiled_code_in_the_archive_is_refused(archives, tmp_path):
    """AOTInductor code in a .pt2 is a shared library torch would load into the process."""
    import zipfile

    path = tmp_path / "aoti.pt2"
    with zipfile.ZipFile(archives["good"]) as zin, zipfile.ZipFile(path, "w") as zout:
        for info in zin.infolist():
            zout.writestr(info, zin.read(info))
        zout.writestr("resnet/data/aotinductor/model/model.so", b"\x7fELF not really")
    proc = run_cli("compile", path, "-o", tmp_path / "b", "--progress", "none")
    assert proc.returncode == EXIT_UNTRUSTED, proc.stderr
    assert f"{path}: archive entry data/aotinductor/model/model.so is compiled code" in proc.stderr
    assert "Traceback" not in proc.stderr and not (tmp_path / "b").exists()

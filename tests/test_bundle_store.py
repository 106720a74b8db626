"""The store of compiled test bundles (tests/bundle_store.py) that pytest and the editor tests
share: one key on both sides, a key that moves with what a compile depends on, and a store that
never presents a half-written bundle."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from tests import bundle_store
from tests.conftest import MODELS

MODEL = MODELS / "sine_float.tflite"
E2E_BUNDLE_LIB = Path(__file__).parent / "e2e" / "lib" / "bundle.mjs"


def _plant(artifacts: Path, key: str) -> Path:
    """A stored bundle under ``key`` that no compile made (so that a lookup must find it)."""
    bundle = artifacts / "bundle-cache" / f"{key}.bundle"
    bundle.mkdir(parents=True)
    (bundle / "manifest.json").write_text('{"planted": true}')
    return bundle


def test_the_editor_tests_take_bundles_from_the_same_store(tmp_path):
    """tests/e2e/lib/bundle.mjs asks this module (``python -m tests.bundle_store``) for a
    bundle: the one key, the one lock."""
    if not shutil.which("node"):
        pytest.skip("node not found")
    planted = _plant(tmp_path, bundle_store.compile_key(MODEL, "cuda", ("--sass", "--repeat", "3")))
    script = (
        "const { compileBundle } = await import(process.argv[1]);"
        "console.log(compileBundle(process.argv[2], { model: process.argv[3], target: 'cuda',"
        " extra: ['--sass', '--repeat', 3], cache: true }));"
    )
    proc = subprocess.run(
        ["node", "--input-type=module", "-e", script, E2E_BUNDLE_LIB.as_uri(), str(tmp_path / "ws"), str(MODEL)],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "TVM_EXPLORER_PYTHON": sys.executable, "TVM_EXPLORER_ARTIFACTS": str(tmp_path)},
    )
    assert proc.returncode == 0, proc.stderr
    copy = Path(proc.stdout.strip())
    assert copy == tmp_path / "ws" / "small_cnn.bundle" and copy != planted
    assert (copy / "manifest.json").read_text() == '{"planted": true}'


def test_a_key_being_compiled_is_waited_for_not_compiled_again(tmp_path):
    """Parallel pytest workers (and the editor tests) asking for one bundle compile it once."""
    builds: list[int] = []
    started = threading.Event()

    def build(out: Path) -> None:
        builds.append(1)
        started.set()
        time.sleep(0.5)  # still compiling when the second asks
        out.mkdir()
        (out / "manifest.json").write_text("{}")

    found: list[Path] = []
    first = threading.Thread(target=lambda: found.append(bundle_store.stored("k", build, tmp_path)))
    first.start()
    started.wait(10)
    found.append(bundle_store.stored("k", build, tmp_path))
    first.join(10)
    assert found == [tmp_path / "k.bundle"] * 2 and builds == [1]


def test_the_key_moves_with_model_place_options_and_interpreter(tmp_path):
    key = bundle_store.compile_key(MODEL, "c", ())
    assert key == bundle_store.compile_key(MODEL, "c", ())
    copy = tmp_path / MODEL.name
    shutil.copyfile(MODEL, copy)  # same bytes elsewhere: its manifest would name another path
    others = {
        bundle_store.compile_key(copy, "c", ()),
        bundle_store.compile_key(MODEL, "llvm", ()),
        bundle_store.compile_key(MODEL, "c", ("--profile",)),
        bundle_store.compile_key(MODEL, "c", (), python="/usr/bin/env"),
    }
    assert key not in others and len(others) == 4


def test_the_key_covers_the_whole_package_and_the_pins():
    files = [rel for rel, _ in bundle_store.code_files()]
    assert "pyproject.toml" in files
    assert "server/tvm_explorer/lsp/server.py" in files and "server/tvm_explorer/cli/compile.py" in files
    assert files == sorted(files)


def test_a_bundle_is_built_once_and_only_whole(tmp_path):
    builds: list[Path] = []

    def build(out: Path) -> None:
        builds.append(out)
        out.mkdir()
        (out / "manifest.json").write_text("{}")

    def fails(out: Path) -> None:
        out.mkdir()
        (out / "half").write_text("")
        raise RuntimeError("stopped")

    with pytest.raises(RuntimeError):
        bundle_store.stored("k", fails, tmp_path)
    assert not (tmp_path / "k.bundle").exists()  # nothing half-written under the key
    first = bundle_store.stored("k", build, tmp_path)
    again = bundle_store.stored("k", build, tmp_path)
    assert first == again == tmp_path / "k.bundle" and len(builds) == 1
    assert (first / "manifest.json").exists() and not (first / "half").exists()


def test_a_built_model_keeps_its_place_and_follows_its_bytes(monkeypatch, tmp_path):
    monkeypatch.setenv("TVM_EXPLORER_ARTIFACTS", str(tmp_path))
    first = bundle_store.built_model("m.tflite", b"one")
    again = bundle_store.built_model("m.tflite", b"one")
    assert first == again == tmp_path / "models" / "m.tflite"
    assert bundle_store.built_model("m.tflite", b"two").read_bytes() == b"two"
    assert sorted(p.name for p in first.parent.iterdir()) == ["m.tflite"]  # no temporary left


def test_bundles_unused_for_a_week_are_pruned_and_a_used_one_is_kept(tmp_path):
    def build(out: Path) -> None:
        out.mkdir()
        (out / "manifest.json").write_text("{}")

    used = bundle_store.stored("used", build, tmp_path)
    stale = bundle_store.stored("stale", build, tmp_path)
    month_ago = time.time() - 30 * 86400
    for path in (used, stale):
        os.utime(path, (month_ago, month_ago))
    bundle_store.stored("used", build, tmp_path)  # a hit: used again now
    bundle_store.stored("new", build, tmp_path)  # a miss prunes
    assert sorted(p.name for p in tmp_path.glob("*.bundle")) == ["new.bundle", "used.bundle"]

"""`compile -o DIR` replaces DIR only when it is a bundle tvm-explorer wrote (or new or empty),
and then deletes only the files it wrote: anything else (the model, `.vscode/`, notes) is kept.
Every refusal is one message naming what is there, exit 2, and nothing written or deleted."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import run_cli
from tvm_explorer.bundle import ownership
from tvm_explorer.bundle.reader import Bundle


def snapshot(root: Path) -> dict[str, str]:
    """Every entry under ``root`` (files with their hash, symlinks with their target)."""
    out = {}
    for p in sorted(root.rglob("*")):
        rel = p.relative_to(root).as_posix()
        if p.is_symlink():
            out[rel] = "-> " + os.readlink(p)
        elif p.is_file():
            out[rel] = hashlib.sha256(p.read_bytes()).hexdigest()
        else:
            out[rel] = "dir"
    return out


def compile_in(cwd: Path, *args) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "tvm_explorer", "compile", *map(str, args)],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=300,
    )


def refused(proc, *needles) -> str:
    assert proc.returncode == 2, (proc.returncode, proc.stdout, proc.stderr)
    lines = proc.stderr.strip().split("\n")
    assert len(lines) == 1 and lines[0].startswith("tvm-explorer: error: "), proc.stderr
    for needle in needles:
        assert needle in lines[0], lines[0]
    assert "Bundle written" not in proc.stdout
    return lines[0]


@pytest.fixture(scope="module")
def sine_bundle(tmp_path_factory, models_dir) -> Path:
    out = tmp_path_factory.mktemp("own") / "b"
    run_cli("compile", models_dir / "sine_float.tflite", "-o", out, check=True)
    return out


def test_web_app_folder_with_a_manifest_is_refused_not_deleted(tmp_path, models_dir):
    """The reproduction of issue 18: `-o .` in a folder whose manifest.json is not ours."""
    app = tmp_path / "p"
    (app / ".git").mkdir(parents=True)
    (app / ".git" / "HEAD").write_text("ref: refs/heads/main\n")
    (app / "manifest.json").write_text('{"name": "x"}')
    (app / "app.js").write_text("x\n")
    shutil.copy(models_dir / "sine_float.tflite", app / "m.tflite")
    before = snapshot(app)
    message = refused(
        compile_in(app, "m.tflite", "-o", "."),
        "manifest.json is not a tvm-explorer bundle manifest",
        "app.js",
        "m.tflite",
        str(app),
    )
    assert "refusing" in message
    assert snapshot(app) == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["p"]  # no temporary sibling


def test_folders_that_are_not_bundles_are_refused(tmp_path, models_dir):
    model = models_dir / "sine_float.tflite"
    plain = tmp_path / "plain"
    plain.mkdir()
    for i in range(7):
        (plain / f"f{i}.txt").write_text(str(i))
    before = snapshot(plain)
    refused(run_cli("compile", model, "-o", plain), "not a bundle", "f0.txt", "and 2 more")
    refused(compile_in(plain, model, "-o", "."), "not a bundle")
    # A manifest with the format marker of something else, and one that is not JSON.
    for text in ('{"format": "other", "documents": []}', "not json"):
        (plain / "manifest.json").write_text(text)
        refused(run_cli("compile", model, "-o", plain), "is not a tvm-explorer bundle manifest")
        (plain / "manifest.json").unlink()
    assert snapshot(plain) == before
    link = tmp_path / "link"
    link.symlink_to(plain)
    refused(run_cli("compile", model, "-o", link), "symbolic link")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["link", "plain"]


def test_new_and_empty_directories_are_written(tmp_path, models_dir):
    empty = tmp_path / "empty"
    empty.mkdir()
    run_cli("compile", models_dir / "sine_float.tflite", "-o", empty, check=True)
    Bundle(empty).preload()


def test_recompile_inside_a_bundle_keeps_the_model_and_user_files(tmp_path, models_dir, sine_bundle):
    """`rb/model.tflite -o rb`: the model, .vscode/, a note among the documents and a
    symlink survive (as the same files); the bundle files are replaced."""
    rb = tmp_path / "rb"
    shutil.copytree(sine_bundle, rb, symlinks=True)
    shutil.copy(models_dir / "small_cnn_fp32.tflite", rb / "model.tflite")
    (rb / ".vscode").mkdir()
    (rb / ".vscode" / "settings.json").write_text("{}")
    (rb / "relax" / "my-notes.txt").write_text("mine")
    (rb / "empty-dir").mkdir()
    (rb / "link").symlink_to("/nonexistent/target")
    mine = {
        k: v
        for k, v in snapshot(rb).items()
        if k.split("/")[0] in (".vscode", "model.tflite", "empty-dir", "link") or "my-notes" in k
    }
    inode = (rb / "model.tflite").stat().st_ino
    proc = run_cli("compile", rb / "model.tflite", "-o", rb)
    assert proc.returncode == 0, proc.stderr
    after = snapshot(rb)
    assert {k: after.get(k) for k in mine} == mine
    assert (rb / "model.tflite").stat().st_ino == inode
    assert Bundle(rb).manifest["model"]["file"] == "model.tflite"
    assert Bundle(rb).manifest["model"]["operators"] > 1  # small_cnn, not sine_float's bundle
    # Files of the old bundle that the new one does not have are gone (they were the tool's).
    old_docs = {d["path"] for d in Bundle(sine_bundle).manifest["documents"]}
    new_docs = {d["path"] for d in Bundle(rb).manifest["documents"]}
    for gone in old_docs - new_docs:
        assert not (rb / gone).exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["rb"]


def test_a_user_file_with_the_name_of_a_new_bundle_file_is_refused(tmp_path, models_dir, sine_bundle):
    """The old manifest does not list code/module.c (so the tool did not write it): the new
    bundle, which has that file, cannot keep it and refuses; nothing is replaced."""
    rb = tmp_path / "rb"
    shutil.copytree(sine_bundle, rb)
    manifest = json.loads((rb / "manifest.json").read_text())
    manifest["documents"] = [d for d in manifest["documents"] if d["path"] != "code/module.c"]
    (rb / "manifest.json").write_text(json.dumps(manifest))
    before = snapshot(rb)
    proc = run_cli("compile", models_dir / "sine_float.tflite", "-o", rb)
    message = refused(proc, "code/module.c", "did not write", "nothing was replaced")
    assert "Traceback" not in message
    assert snapshot(rb) == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["rb"]


def test_an_input_that_is_a_file_of_the_bundle_is_refused(tmp_path, models_dir, sine_bundle):
    rb = tmp_path / "rb"
    shutil.copytree(sine_bundle, rb)
    shutil.copy(models_dir / "sine_float.tflite", rb / "model.tflite")
    manifest = json.loads((rb / "manifest.json").read_text())
    manifest["documents"].append({"path": "model.tflite", "stage": "model", "language": "x"})
    (rb / "manifest.json").write_text(json.dumps(manifest))
    before = snapshot(rb)
    refused(run_cli("compile", rb / "model.tflite", "-o", rb), "model.tflite is a file of the bundle")
    assert snapshot(rb) == before


def test_the_current_directory_is_never_replaced(tmp_path, models_dir, sine_bundle):
    rb = tmp_path / "rb"
    shutil.copytree(sine_bundle, rb)
    before = snapshot(rb)
    refused(compile_in(rb, models_dir / "sine_float.tflite", "-o", "."), "current directory")
    refused(compile_in(rb / "relax", models_dir / "sine_float.tflite", "-o", ".."), "current directory")
    assert snapshot(rb) == before


def test_a_stale_temporary_directory_keeps_files_the_tool_did_not_write(tmp_path, sine_bundle):
    """The replaced bundle of a compile killed in the instant after its swap: its own files
    go, a foreign file (one name only) is kept."""
    stale = tmp_path / ".b.tmp-999999"
    shutil.copytree(sine_bundle, stale)
    (stale / "dropped.txt").write_text("mine")
    assert ownership.remove_stale(stale) == ["dropped.txt"]
    assert snapshot(stale) == {"dropped.txt": hashlib.sha256(b"mine").hexdigest()}

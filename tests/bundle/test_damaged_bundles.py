"""Damaged and hostile bundles: the reader and the `origins`/`coverage` commands report one
clear error (or answer from the intact part), never a traceback, never block, and never read a
file outside the bundle. Loading a bundle is JSON and text only: nothing in it is executed."""

from __future__ import annotations

import ast
import json
import os
import shutil
import time
from pathlib import Path

import pytest

from conftest import run_cli
from tvm_explorer.bundle.reader import Bundle
from tvm_explorer.errors import BundleError

C = "code/module.c"


@pytest.fixture(scope="module")
def good(gt_model, bundles) -> Path:
    return bundles.get(gt_model, "c")


def outside_file(tmp_path: Path) -> Path:
    """A file outside every bundle whose access time shows whether anyone read it."""
    secret = tmp_path / "outside" / "secret.txt"
    secret.parent.mkdir(exist_ok=True)
    secret.write_text("secret\n" * 10)
    old = time.time() - 3 * 86400
    os.utime(secret, (old, secret.stat().st_mtime))
    return secret


def atime_works(tmp_path: Path) -> bool:
    probe = tmp_path / "atime-probe"
    probe.write_text("x")
    old = time.time() - 3 * 86400
    os.utime(probe, (old, probe.stat().st_mtime))
    probe.read_text()
    return probe.stat().st_atime != old


def edit_json(path: Path, change) -> None:
    data = json.loads(path.read_text())
    change(data)
    path.write_text(json.dumps(data))


def first_range_doc(root: Path) -> str:
    index = json.loads((root / "index.json").read_text())
    return next(p for p, d in index["documents"].items() if d["ranges"] and p.startswith("relax/"))


def _set_doc_path(value):
    def change(man):
        man["documents"][1]["path"] = value

    return change


def _nest(depth):
    return "[" * depth + "]" * depth


DAMAGE = {
    # name: (function(root, secret) doing the damage, what the error says, fails at load?)
    "manifest missing": (lambda r, s: (r / "manifest.json").unlink(), "missing manifest", True),
    "manifest not json": (lambda r, s: (r / "manifest.json").write_text("{ nope"), "not readable JSON", True),
    "manifest a list": (
        lambda r, s: (r / "manifest.json").write_text("[]"),
        "not a tvm-explorer bundle manifest",
        True,
    ),
    "manifest deeply nested": (lambda r, s: (r / "manifest.json").write_text(_nest(100000)), "not readable JSON", True),
    "manifest binary": (
        lambda r, s: (r / "manifest.json").write_bytes(b"\xff\xfe\x00garbage"),
        "not readable JSON",
        True,
    ),
    "schema version": (
        lambda r, s: edit_json(r / "manifest.json", lambda m: m.update(schema_version=99)),
        "schema version 99 is not supported",
        True,
    ),
    "incomplete": (lambda r, s: edit_json(r / "manifest.json", lambda m: m.update(complete=False)), "incomplete", True),
    "index not json": (lambda r, s: (r / "index.json").write_text("nope"), "not readable JSON", True),
    "index schema": (
        lambda r, s: edit_json(r / "index.json", lambda i: i.update(schema_version="1")),
        "unknown index schema",
        True,
    ),
    "dotdot path": (
        lambda r, s: edit_json(r / "manifest.json", _set_doc_path("../../etc/passwd")),
        "leaves the bundle",
        True,
    ),
    "absolute path": (
        lambda r, s: edit_json(r / "manifest.json", _set_doc_path(str(s))),
        "is not a relative path",
        True,
    ),
    "backslash path": (
        lambda r, s: edit_json(r / "manifest.json", _set_doc_path("..\\..\\x")),
        "leaves the bundle",
        True,
    ),
    "symlinked document": (lambda r, s: ((r / C).unlink(), os.symlink(s, r / C)), "leads outside the bundle", True),
    "symlinked manifest": (
        lambda r, s: ((r / "manifest.json").unlink(), os.symlink(s, r / "manifest.json")),
        "leads outside the bundle",
        True,
    ),
    "symlinked index": (
        lambda r, s: ((r / "index.json").unlink(), os.symlink(s, r / "index.json")),
        "leads outside the bundle",
        True,
    ),
    "symlink loop": (
        lambda r, s: ((r / C).unlink(), os.symlink(r / "code" / "loop", r / C), os.symlink(r / C, r / "code" / "loop")),
        "cannot be resolved",
        True,
    ),
    "bad pass entry": (
        lambda r, s: edit_json(r / "manifest.json", lambda m: m["passes"].append({"index": "x"})),
        "pass entry",
        True,
    ),
    "model a string": (
        lambda r, s: edit_json(r / "manifest.json", lambda m: m.update(model="str")),
        "'model' must be an object, not str",
        True,
    ),
    "model file a list": (
        lambda r, s: edit_json(r / "manifest.json", lambda m: m["model"].update(file=[1])),
        "'model.file' must be a string, not list",
        True,
    ),
    "tool a string": (
        lambda r, s: edit_json(r / "manifest.json", lambda m: m.update(tool="0.27")),
        "'tool' must be an object, not str",
        True,
    ),
    "fifo manifest": (
        lambda r, s: ((r / "manifest.json").unlink(), os.mkfifo(r / "manifest.json")),
        "not a regular file",
        True,
    ),
    # These fail only when the damaged document is read (the rest of the bundle works).
    "document missing": (lambda r, s: (r / C).unlink(), "missing", False),
    "document a fifo": (lambda r, s: ((r / C).unlink(), os.mkfifo(r / C)), "not a regular file", False),
    "document a directory": (lambda r, s: ((r / C).unlink(), (r / C).mkdir()), "not a regular file", False),
    "document huge": (lambda r, s: os.truncate(r / C, 300 * 2**20), "more than the 256 MiB", False),
    "document not utf8": (lambda r, s: (r / C).write_bytes(b"\xff" * 100), "cannot read document", False),
    "document edited": (lambda r, s: (r / C).write_text((r / C).read_text() + "x"), "index does not match", False),
}


def _index_damage(change, needle):
    def damage(root, _secret):
        def edit(index):
            change(index["documents"][C])

        edit_json(root / "index.json", edit)

    return damage, needle, False


def _first_range(update):
    def change(doc):
        doc["ranges"][0] = update(list(doc["ranges"][0]))

    return change


DAMAGE |= {
    "range past the end": _index_damage(_first_range(lambda r: [r[0], 10**9, *r[2:]]), "past the document end"),
    "range negative": _index_damage(_first_range(lambda r: [-5, r[1], *r[2:]]), "past the document end"),
    "range string offsets": _index_damage(_first_range(lambda r: ["0", "5", *r[2:]]), "non-integer"),
    "range unknown origin set": _index_damage(_first_range(lambda r: [r[0], r[1], 99999, *r[3:]]), "malformed"),
    "range dict link": _index_damage(_first_range(lambda r: [*r[:5], {"a": 1}]), "malformed key or link"),
    "range unknown kind": _index_damage(_first_range(lambda r: [*r[:3], "exec", *r[4:]]), "malformed"),
    "ranges not a list": _index_damage(lambda d: d.update(ranges=7), "malformed"),
    "range short": _index_damage(_first_range(lambda r: r[:2]), "malformed"),
}


@pytest.mark.parametrize("name", sorted(DAMAGE))
def test_damaged_bundle_gives_one_clear_error(good, tmp_path, name):
    damage, needle, at_load = DAMAGE[name]
    root = tmp_path / "b"
    shutil.copytree(good, root, symlinks=True)
    secret = outside_file(tmp_path)
    damage(root, secret)
    if at_load:
        with pytest.raises(BundleError) as err:
            Bundle(root).preload()
        assert needle in str(err.value), str(err.value)
    else:
        bundle = Bundle(root)
        problems = bundle.preload()
        assert len(problems) == 1 and needle in str(problems[0]), problems
        assert bundle.index(C).ranges == []  # the damaged document answers empty
    # The commands: one message (or an answer from the intact part), never a traceback.
    for args in (
        ("coverage", root),
        ("coverage", root, "--json"),
        ("origins", root, f"{C}:5"),
        ("origins", root, "model.tflgraph:2", "--json"),
    ):
        proc = run_cli(*args, timeout=60)
        assert "Traceback" not in proc.stderr, (args, proc.stderr)
        if proc.returncode:
            lines = proc.stderr.strip().split("\n")
            assert len(lines) == 1 and lines[0].startswith("tvm-explorer: error: "), proc.stderr
    if atime_works(tmp_path):
        assert secret.stat().st_atime < time.time() - 86400, "a file outside the bundle was read"


def test_origins_command_reports_the_damaged_document(good, tmp_path):
    root = tmp_path / "b"
    shutil.copytree(good, root)
    (root / C).write_text("int x;\n")
    proc = run_cli("origins", root, f"{C}:1")
    assert proc.returncode == 2 and "index does not match the document" in proc.stderr
    proc = run_cli("origins", root, "model.tflgraph:2")
    assert proc.returncode == 0, proc.stderr


# -- nothing executable ----------------------------------------------------------------------
LOADER_MODULES = (
    "bundle/reader.py",
    "bundle/index.py",
    "bundle/index_load.py",
    "bundle/format.py",
    "supervise/child_python.py",
    "navigation/registry.py",
    "navigation/view.py",
    "bundle/sections/costs.py",
    "navigation/costs.py",
    "costs/table.py",
    "bundle/fields.py",
    "bundle/sections/numerics.py",
    "bundle/sections/bisect.py",
    "bundle/files.py",
    "bundle/types.py",
    "bundle/manifest.py",
    "bundle/line_pieces.py",
    "bundle/safe_open.py",
    "bundle/sections/__init__.py",
    "bundle/sections/memory.py",
    "bundle/sections/sass.py",
    "bundle/sections/tuning.py",
    "bundle/sections/structure.py",
)
# The one process a loader starts: this interpreter, parsing index.json (``index_load``), with
# a fixed command; the bundle's bytes reach it on stdin, its answer is read with json.loads.
# (child_python keeps the working directory off sys.path: tests/lsp/test_workspace_isolation.py)
WORKER_COMMAND = "python_module_command(__name__, str(where), site=False)"

FORBIDDEN_CALLS = {
    "eval",
    "exec",
    "compile",
    "__import__",
    "import_module",
    "load",
    "loads",
    "Unpickler",
    "system",
    "popen",
    "Popen",
    "run",
    "spawn",
    "dlopen",
    "CDLL",
}
FORBIDDEN_MODULES = {
    "pickle",
    "marshal",
    "shelve",
    "dill",
    "yaml",
    "subprocess",
    "importlib",
    "ctypes",
    "runpy",
    "code",
    "numpy",
    "tvm",
    "tvm_ffi",
}


def test_bundle_loading_code_is_json_and_text_only():
    """Static: the modules a loader runs import nothing that can execute data, and call no
    deserializer but ``json.loads``."""
    root = Path(__file__).resolve().parents[2] / "server" / "tvm_explorer"
    for rel in LOADER_MODULES:
        tree = ast.parse((root / rel).read_text(), rel)
        worker = rel == "bundle/index_load.py"
        for node in ast.walk(tree):
            if worker and isinstance(node, ast.Import) and [a.name for a in node.names] == ["subprocess"]:
                continue
            if worker and isinstance(node, ast.Call) and ast.unparse(node.func) == "subprocess.Popen":
                assert ast.unparse(node.args[0]) == WORKER_COMMAND, ast.unparse(node)
                assert not [k for k in node.keywords if k.arg in ("shell", "executable")], ast.unparse(node)
                continue
            if isinstance(node, ast.Import):
                assert not {a.name.split(".")[0] for a in node.names} & FORBIDDEN_MODULES, (rel, node.lineno)
            elif isinstance(node, ast.ImportFrom) and node.level == 0:
                assert node.module.split(".")[0] not in FORBIDDEN_MODULES, (rel, node.lineno)
            elif isinstance(node, ast.Call):
                func = node.func
                name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
                if name in ("loads", "load"):
                    owner = getattr(func.value, "id", None) if isinstance(func, ast.Attribute) else None
                    assert owner == "json", (rel, node.lineno, ast.unparse(node))
                elif ast.unparse(func) != "re.compile":  # a regular expression, not code
                    assert name not in FORBIDDEN_CALLS, (rel, node.lineno, ast.unparse(node))


@pytest.mark.parametrize("worker", [False, True], ids=["index parsed here", "index parsed by the worker"])
def test_loading_a_bundle_runs_no_deserializer_but_json(good, monkeypatch, worker):
    """Dynamic: with pickle, marshal, eval and exec made to fail, a bundle still loads,
    answers, and builds every lookup table."""
    import builtins
    import marshal
    import pickle

    from tvm_explorer.bundle import index_load
    from tvm_explorer.navigation import registry

    if worker:
        monkeypatch.setattr(index_load, "WORKER_MIN_BYTES", 0)
        monkeypatch.setattr(index_load, "parse_index", lambda *a: pytest.fail("the worker did not run"))
    else:
        monkeypatch.setattr(index_load, "WORKER_MIN_BYTES", 1 << 40)

    def refuse(*_a, **_k):
        raise AssertionError("loading a bundle must not execute or unpickle anything")

    # Python itself reads its compiled modules with marshal: load once first, so that every
    # module a load imports on first use is imported before marshal is refused.
    registry.load(good.resolve()).layer_map  # noqa: B018 - built on first use
    import subprocess  # noqa: F401  (the worker is started with it)

    for mod, name in (
        (pickle, "loads"),
        (pickle, "load"),
        (pickle, "Unpickler"),
        (marshal, "loads"),
        (marshal, "load"),
        (builtins, "eval"),
        (builtins, "exec"),
        (builtins, "compile"),
    ):
        monkeypatch.setattr(mod, name, refuse)
    view = registry.load(good.resolve())
    assert not view.problems
    assert view.layer_map.places_of(tuple(range(len(view.bundle.layers))))
    assert view.bundle.origins_at(first_range_doc(good), 0) is not None

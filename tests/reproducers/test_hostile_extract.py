"""Issue 26: a reproducer runs only what tvm-explorer wrote. Manifest and index strings (model
file, TVM version, pass names, opcodes, tensor names, the bundle's path) crafted to break out
of the script's ``#`` header stay comments (the script's syntax tree is the clean bundle's),
running the script creates nothing, TVMScript tampered with is refused with one message, a
lone surrogate neither crashes the writer nor leaves a temporary file, and a manifest whose
``model`` is not an object is one message in every command."""

from __future__ import annotations

import ast
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from tests.conftest import run_cli
from tests.lsp.hostile import code_payloads, plant_package

from tvm_explorer.errors import ExplorerError
from tvm_explorer.reproducers.extract import Reproducer, write

PAYLOAD = "".join(code_payloads("PWNED"))


@pytest.fixture(scope="module")
def good(gt_model, bundles) -> Path:
    return bundles.get(gt_model, "c")


def _edit(path: Path, change) -> None:
    data = json.loads(path.read_text())
    change(data)
    path.write_text(json.dumps(data))


def _hostile_manifest(manifest: dict) -> None:
    manifest["model"]["file"] = PAYLOAD + manifest["model"]["file"]
    manifest["model"]["sha256"] = PAYLOAD
    manifest["tool"]["tvm"] = PAYLOAD
    for entry in manifest["passes"]:
        if entry["name"] not in ("LegalizeOps", "FuseOps"):  # the reference is built from these
            entry["name"] = PAYLOAD + entry["name"]


def _hostile_index(index: dict) -> None:
    for layer in index["layers"]:
        layer["opcode"] = PAYLOAD + layer["opcode"]
        layer["outputs"] = [PAYLOAD + str(o) for o in layer["outputs"]]


def _leftovers(folder: Path) -> list[str]:
    return [p.name for p in folder.iterdir() if ".tmp-" in p.name]


def _one_error(proc) -> str:
    assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr
    lines = proc.stderr.strip().split("\n")
    assert len(lines) == 1 and lines[0].startswith("tvm-explorer: error: "), proc.stderr
    return lines[0]


def test_hostile_bundle_strings_stay_comments_and_the_script_runs_nothing(good, tmp_path):
    clean = tmp_path / "clean.py"
    assert run_cli("extract", good, "--layer", "0", "-o", clean).returncode == 0
    # The bundle's own folder name carries a line break too (its path is in the header).
    root = tmp_path / f"b{code_payloads('PWNED')[0]}"
    shutil.copytree(good, root)
    _edit(root / "manifest.json", _hostile_manifest)
    _edit(root / "index.json", _hostile_index)
    out_dir = tmp_path / "out"
    out_dir.mkdir()
    script = out_dir / "repro.py"
    proc = run_cli("extract", root, "--layer", "0", "-o", script)
    assert proc.returncode == 0 and "Traceback" not in proc.stderr, proc.stderr
    assert not _leftovers(out_dir)
    text = script.read_text(encoding="utf-8")
    # Only comments differ from the clean bundle's script: not one statement more.
    assert ast.dump(ast.parse(text)) == ast.dump(ast.parse(clean.read_text()))
    header = text.split("\n\n", 1)[0].split("\n")
    assert len(header) == len(clean.read_text().split("\n\n", 1)[0].split("\n"))
    assert all(line.startswith("# ") and line.isprintable() for line in header), header
    assert "open('PWNED', 'w')" in text and "\\ud800" in text
    # Run as the CLI says, from a folder where the payloads' relative marker would land, with
    # a numpy/ and a tvm/ planted next to the script (the bundle's archive may hold them).
    planted = tmp_path / "PLANTED-CODE-RAN"
    for name in ("numpy", "tvm"):
        plant_package(out_dir, planted, name)
    ran = subprocess.run([sys.executable, str(script)], cwd=tmp_path, capture_output=True, text=True, timeout=600)
    assert ran.returncode == 0, ran.stdout + ran.stderr
    assert "OK against the reference" in ran.stdout
    assert not (tmp_path / "PWNED").exists() and not (out_dir / "PWNED").exists()
    assert not planted.exists(), "the script imported a package from its own folder"


FUNC_ATTR = '        T.func_attr({"tirx.noalias": True})'
TAMPERED = {
    "call of open": '        open("PWNED", "w")',
    "__import__": '        __import__("os").mkdir("PWNED")',
    "import statement": "        import os",
    "outside the class": 'import os; os.mkdir("PWNED")',
    "script global np": '        np.save("PWNED", 1)',
    "dunder attribute": "        T.int32.__class__",
    "TVMScript parser": '        T.parser.parse("x")',
    "str.format": '        "{0.__class__}".format(T)',
    "getattr": '        T.evaluate(getattr(T, "x"))',
    "comprehension": "        [x for x in T.grid(1)]",
    "class body statement": '    x = open("PWNED", "w")',
}


@pytest.mark.parametrize("name", sorted(TAMPERED))
def test_tampered_tvmscript_is_refused_with_one_message(good, tmp_path, name):
    root = tmp_path / "b"
    shutil.copytree(good, root)
    line = TAMPERED[name].ljust(len(FUNC_ATTR))
    assert len(line) == len(FUNC_ATTR)  # same length: the index still matches the text
    for doc in (root / "tir").iterdir():
        doc.write_text(doc.read_text().replace(FUNC_ATTR, line))
    out = tmp_path / "repro.py"
    said = _one_error(run_cli("extract", root, "--layer", "0", "-o", out))
    assert "which TVM does not print; not written into a script" in said, said
    assert not out.exists() and not _leftovers(tmp_path)
    assert not (tmp_path / "PWNED").exists()


def test_a_text_utf8_cannot_encode_is_one_message_and_no_file(tmp_path):
    out = tmp_path / "x.py"
    with pytest.raises(
        ExplorerError,
        match=r"x\.py: the reproducer holds a character UTF-8 "
        r"cannot encode \('\\ud800'\); nothing written",
    ):
        write(Reproducer("# \ud800\n", ["k"], "tir/x.tir", 1, "p"), out)
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("model", ["str", 5, ["a"]])
def test_manifest_model_not_an_object_is_one_message_everywhere(good, tmp_path, model):
    root = tmp_path / "b"
    shutil.copytree(good, root)
    _edit(root / "manifest.json", lambda m: m.update(model=model))
    for args in (
        ("costs", root),
        ("extract", root, "--layer", "0", "-o", tmp_path / "r.py"),
        ("compare", root, good),
        ("compare", good, root),
    ):
        said = _one_error(run_cli(*args, timeout=120))
        assert f"manifest.json: 'model' must be an object, not {type(model).__name__}" in said, said
    assert not (tmp_path / "r.py").exists() and not _leftovers(tmp_path)


PRINTED = """    @T.prim_func(private=True)
    def f(input: T.Buffer((4,), "float32"), B: T.Buffer((4,), "float32")):
        T.func_attr({"tirx.noalias": True})
        for i in T.serial(4):
            with T.sblock("b"):
                v_i = T.axis.spatial(4, i)
                r = T.comm_reducer(lambda x, y: x + y, [T.float32(0.0)])
                B[v_i] = input[v_i] + T.Cast("float32", B.data[0])"""
# Shadowing that a line-for-line edit cannot show: a name is bound only where it is bound.
NOT_PRINTED = {
    "lambda parameter used outside it": PRINTED.replace("lambda x, y: x + y", "lambda open, y: y")
    + '\n        open("PWNED", "w")',
    "parameter named by its own annotation": PRINTED.replace(
        'input: T.Buffer((4,), "float32")', 'open: open("PWNED", "w")'
    ),
    "default": PRINTED.replace('B: T.Buffer((4,), "float32")', 'B=open("PWNED", "w")'),
    "decorator": PRINTED.replace("@T.prim_func(private=True)", '@T.prim_func(open("PWNED"))'),
    "other decorator": PRINTED.replace("@T.prim_func(private=True)", "@staticmethod"),
    "line separator": PRINTED.replace("# ", "") + "  # \u2028open('PWNED', 'w')",
}


def test_check_functions_admits_what_tvm_prints_and_nothing_else():
    from tvm_explorer.reproducers.script_text import check_functions

    check_functions(PRINTED, "f")  # a parameter may be called `input`; lambdas bind theirs
    for name, text in NOT_PRINTED.items():
        with pytest.raises(ExplorerError, match="which TVM does not print"):
            check_functions(text, name)

"""A .pt2 never makes us evaluate a string (issue 37 item 1).

torch's deserializer hands a symbolic size's ``expr_str`` to ``sympy.sympify`` (which evaluates
it as Python), turns ``guards_code`` into Python it ``exec``\\ s, and writes argument names into
the ``forward`` torch.fx generates and runs. Each hostile archive (``hostile_pt2.rewrite_program``)
is a real exported program with an open batch size, saved by ``torch.export.save`` and then
rewritten so one such string creates a marker file when evaluated. Every way of reading a
``.pt2`` refuses it with one message naming the archive entry and the place in it, and the
marker never appears — also with ``--trust-pickle``, which is about pickles only.
"""

from __future__ import annotations

import io
import zipfile

import pytest

from numerics.runs import compile_llvm

torch = pytest.importorskip("torch", reason="PyTorch is not installed (pip install -e '.[torch]')")

from conftest import run_cli  # noqa: E402
from frontends import hostile_pt2  # noqa: E402

ENTRY = "archive entry models/model.json"
WHERE = {
    "expr": "the symbolic size at graph_module.graph.tensor_values.x.sizes[0].as_expr.expr_str",
    "guard": "the guard at guards_code[0]",
    "name": "the argument name at graph_module.module_call_graph[0].signature.forward_arg_names[0]",
}


@pytest.fixture(scope="module")
def archives(tmp_path_factory) -> dict:
    root = tmp_path_factory.mktemp("pt2-expressions")
    good = root / "dynamic.pt2"
    torch.export.save(hostile_pt2.dynamic_program(), good)
    out = {"good": good, "marker": root / "MARKER"}
    for what in WHERE:
        out[what] = root / f"evil-{what}.pt2"
        hostile_pt2.rewrite_program(good, out[what], out["marker"], what)
    return out


def _refused(proc, path, what: str) -> None:
    errors = [ln for ln in proc.stderr.splitlines() if ln.startswith("tvm-explorer: error:")]
    assert proc.returncode == 2, proc.stderr
    assert len(errors) == 1 and "Traceback" not in proc.stderr, proc.stderr
    assert f"{path}: {ENTRY}: {WHERE[what]}" in errors[0], errors[0]
    assert "evaluate it as Python code" in errors[0], errors[0]


@pytest.mark.parametrize("what,trust", [("expr", False), ("guard", True), ("name", False)])
def test_compile_refuses_what_torch_would_evaluate(archives, what, trust, tmp_path):
    extra = ["--trust-pickle"] if trust else []  # pickles only: no way around this check
    proc = run_cli("compile", archives[what], "-o", tmp_path / "b", "--progress", "none", *extra)
    _refused(proc, archives[what], what)
    assert not archives["marker"].exists(), "the payload ran"
    assert not (tmp_path / "b").exists()


def test_numerics_reference_refuses_an_expression(archives, tmp_path):
    import numpy as np

    np.savez(tmp_path / "in.npz", x=np.zeros((2, 3, 8, 8), np.float32))  # the batch is open
    proc = compile_llvm(
        archives["good"],
        tmp_path / "b",
        "--numerics",
        "--inputs",
        tmp_path / "in.npz",
        "--reference",
        archives["expr"],
        "--progress",
        "none",
    )
    _refused(proc, archives["expr"], "expr")
    assert not archives["marker"].exists(), "the payload ran"
    assert not (tmp_path / "b").exists()


def test_bisect_refuses_an_expression(archives, tmp_path):
    import numpy as np

    proc = run_cli("bisect", archives["guard"], "--progress", "none")
    _refused(proc, archives["guard"], "guard")
    np.savez(tmp_path / "in.npz", x=np.zeros((2, 3, 8, 8), np.float32))  # the batch is open
    proc = run_cli(
        "bisect",
        archives["good"],
        "--reference",
        archives["expr"],
        "--inputs",
        tmp_path / "in.npz",
        "--progress",
        "none",
    )
    _refused(proc, archives["expr"], "expr")
    assert not archives["marker"].exists(), "the payload ran"


def test_the_model_preview_refuses_it_too(archives):
    """The editor's model document of a .pt2 (read from its JSON, without torch)."""
    from tvm_explorer.errors import ModelError
    from tvm_explorer.frontends.preview import model_document_text

    assert "forward" in model_document_text(archives["good"])
    for what in WHERE:
        with pytest.raises(ModelError) as err:
            model_document_text(archives[what])
        assert f"{archives[what]}: {ENTRY}: {WHERE[what]}" in str(err.value)
    assert not archives["marker"].exists()


def test_the_bytes_torch_reads_are_checked_too(archives, monkeypatch):
    """Two zip readers may disagree on a crafted file: whatever JSON torch's own reader hands
    its deserializer is checked again, even if the first check saw something else."""
    from tvm_explorer.errors import ModelError
    from tvm_explorer.frontends.torch import safe_load

    monkeypatch.setattr(safe_load, "check_archive", lambda path, archive: set())
    data = archives["expr"].read_bytes()
    with pytest.raises(ModelError) as err:
        safe_load.load_exported_program("evil.pt2", data)
    assert f"evil.pt2: {ENTRY}: {WHERE['expr']}" in str(err.value)
    assert not archives["marker"].exists(), "the payload ran"
    assert safe_load.load_exported_program("good.pt2", archives["good"].read_bytes()) is not None


def test_an_entry_twice_is_refused(archives, tmp_path):
    """A second models/model.json after the first: Python's zipfile reads the last one, other
    readers the first."""
    from tvm_explorer.errors import ModelError
    from tvm_explorer.frontends.torch.safe_load import load_exported_program

    buffer = io.BytesIO()
    with zipfile.ZipFile(archives["good"]) as zin, zipfile.ZipFile(buffer, "w") as zout:
        for info in zin.infolist():
            zout.writestr(info, zin.read(info))
        with zipfile.ZipFile(archives["expr"]) as evil:
            name = next(n for n in evil.namelist() if n.endswith("/models/model.json"))
            with pytest.warns(UserWarning, match="Duplicate name"):
                zout.writestr(name, evil.read(name))
    with pytest.raises(ModelError, match="archive entry models/model.json appears twice"):
        load_exported_program("twice.pt2", buffer.getvalue())
    assert not archives["marker"].exists()


# What torch 2.13 writes (sympy.srepr) and what older torch wrote (str) is accepted; code is not.
SYMBOL = "Symbol('s77', positive=True, integer=True)"
WRITTEN = [
    SYMBOL,
    f"Add(Mul(Integer(2), {SYMBOL}), Integer(1))",
    f"Pow({SYMBOL}, Rational(1, 2))",
    f"Mul(Float('1.5', precision=53), {SYMBOL})",
    f"FloorDiv(Add({SYMBOL}, Integer(2)), Integer(3))",
    f"Piecewise(ExprCondPair(Integer(1), StrictGreaterThan({SYMBOL}, Integer(2))), ExprCondPair(Integer(0), true))",
    f"ModularIndexing({SYMBOL}, Integer(1), Integer(4))",
    f"Equality({SYMBOL}, Integer(2))",
    "-oo",
    "int_oo",
    "s0",
    "2*s0 + 1",
    "s0**2",
    "((s0//2))",
    "Eq(s0, 2)",
    "(s0 >= 2) & (u1 <= 5)",
    "Max(1, s0)",
    "1.5*zf0",
    "Piecewise((1, s0 > 2), (0, True))",
]
CODE = [
    "__import__('os').system('id')",
    f"{SYMBOL} if exec('1') else 0",
    "s0.__class__",
    "Symbol('s0')[0]",
    "lambda: 1",
    "Symbol('os.system')",
    "Symbol('s0', evaluate=exec)",
    "sympify('1')",
    "S('x')",
    "s0\nimport os",
    "s0\rimport os",
    "ｓ0",  # fullwidth s: Python would read it as s0
    # evaluating these would not end (or exhaust memory) rather than run code
    "Pow(Integer(2), Integer(10000000000))",
    "2**64**64",
    "Pow(Pow(Integer(2), Integer(64)), Integer(64))",
    "LShift(Integer(1), Integer(100000))",
    "Pow(Integer(2), Symbol('s0'))",
    "1" * 50,
    "Add(" * 100 + "1" + ")" * 100,
]
GUARDS = [
    "L['x'].size()[0] <= 8",
    "2 <= L['x'].size()[0]",
    "(L['x'].size()[0] % 2) == 0",
    "L['flat_args'][0].size()[1] == L['y'].stride()[0]",
    "math.floor(L['x'].size()[0] / 2) == 3",
]
BAD_GUARDS = [
    "__import__('os').system('id') is None",
    "L['x'].__class__",
    "exec('1')",
    "L['x\\'']",
    "L['x'].size()[0] == 'a'*10",
    "L['x'].size()[0] ** 10000",
]


def test_the_grammars():
    from tvm_explorer.frontends.torch.symbolic import Refused, check_expression, check_guard

    for text in WRITTEN:
        check_expression(text)
    for text in CODE:
        with pytest.raises(Refused):
            check_expression(text)
    for text in GUARDS:
        check_guard(text)
    for text in BAD_GUARDS:
        with pytest.raises(Refused):
            check_guard(text)

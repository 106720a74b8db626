"""``tvm-explorer reduce`` on real TVM 0.27 failures (no mocks): a failing operator inside a
larger healthy graph is reduced to the operator alone, with the same failure; the written
models load in LiteRT / onnxruntime; the repro script fails the same way in a fresh process.
Each reduction runs once per module (``--jobs 2``)."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from tests.conftest import CLI, run_cli

from .models import onnx_unsupported, tflite_tensor_reshape, tflite_while_with_custom_op

PLANTED = Path(__file__).with_name("planted.py")


def _reduce(model, out, *extra):
    started = time.monotonic()
    proc = run_cli("reduce", model, "-o", out, "--jobs", "2", "--progress", "none", *extra)
    proc.seconds = time.monotonic() - started
    return proc


def _kept(report: Path) -> list[tuple[int, str]]:
    rows = re.findall(r"^\| (\d+) \| `([^`|]+)` \|", report.read_text(), re.M)
    return [(int(i), kind) for i, kind in rows]


def _repro(script: Path, timeout=300):
    """The repro script in a fresh process, from another directory, without our package."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    return subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, cwd="/", env=env, timeout=timeout
    )


@pytest.fixture(scope="module")
def tflite_import(tmp_path_factory):
    d = tmp_path_factory.mktemp("reduce-tflite")
    tflite_tensor_reshape(d / "big.tflite")
    return d, _reduce(d / "big.tflite", d / "small.tflite")


@pytest.fixture(scope="module")
def onnx_import(tmp_path_factory):
    d = tmp_path_factory.mktemp("reduce-onnx")
    onnx_unsupported(d / "big.onnx")
    return d, _reduce(d / "big.onnx", d / "small.onnx")


@pytest.fixture(scope="module")
def onnx_compile(tmp_path_factory):
    d = tmp_path_factory.mktemp("reduce-onnx-compile")
    onnx_unsupported(d / "big.onnx", op="Softsign")  # imports; the planted pass rejects Sigmoid
    return d, _reduce(d / "big.onnx", d / "small.onnx", "--pipeline", f"{PLANTED}:raise_on_sigmoid")


def test_a_tensor_shaped_reshape_is_reduced_to_the_reshape_alone(tflite_import):
    d, proc = tflite_import
    assert proc.returncode == 0, proc.stderr
    assert "12 → 1 (1-minimal)" in proc.stdout
    assert _kept(d / "small.report.md") == [(6, "RESHAPE")]
    report = (d / "small.report.md").read_text()
    assert "**1-minimal**" in report and "TVM 0.27" in report
    # the same error class and operator, in the original's words and the reduced model's
    assert report.count("TypeError during import") == 2 and report.count("(RESHAPE, output tensor") == 2


def test_the_reduced_tflite_loads_and_runs_in_litert(tflite_import):
    from ai_edge_litert.interpreter import Interpreter

    d, _ = tflite_import
    interp = Interpreter(model_path=str(d / "small.tflite"))
    interp.allocate_tensors()
    ins = interp.get_input_details()
    assert [i["dtype"] for i in ins] == [np.float32, np.int32]  # the cut shape tensor is an input
    interp.set_tensor(ins[0]["index"], np.ones(ins[0]["shape"], np.float32))
    interp.set_tensor(ins[1]["index"], np.array([1, 8, 8, 4], np.int32))
    interp.invoke()
    assert interp.get_tensor(interp.get_output_details()[0]["index"]).shape == (1, 8, 8, 4)


def test_the_tflite_repro_fails_the_same_way_in_a_fresh_process(tflite_import):
    d, _ = tflite_import
    script = (d / "small.repro.py").read_text()
    assert "tvm_explorer" not in script
    # the header names every package it imports (it said "stock TVM and numpy" and imported tflite)
    assert "# Imports numpy, tvm and tflite (and Python's own modules)" in script
    proc = _repro(d / "small.repro.py")
    assert proc.returncode != 0
    assert "TypeError: Mismatched type on argument #0 when calling: `relax.ShapeExpr" in proc.stderr
    assert "reshape" in proc.stderr.lower()


def test_subgraphs_nothing_runs_any_more_are_dropped(tmp_path, models_dir):
    """A failing op after a WHILE: the reduced model keeps that op alone and none of the
    WHILE's cond and body subgraphs (22 ops it carried before), and the report says the count
    over all subgraphs."""
    from ai_edge_litert import schema_py_generated as schema

    tflite_while_with_custom_op(tmp_path / "big.tflite", models_dir)
    proc = _reduce(tmp_path / "big.tflite", tmp_path / "small.tflite")
    assert proc.returncode == 0, proc.stderr
    assert "9 → 1 (1-minimal)" in proc.stdout and "over all subgraphs: 31 → 1" in proc.stdout
    assert _kept(tmp_path / "small.report.md") == [(7, "CUSTOM:PlantedOp")]
    assert (
        "Over all subgraphs (loop and branch bodies included): 31 → 1 ops" in (tmp_path / "small.report.md").read_text()
    )
    small = schema.ModelT.InitFromPackedBuf((tmp_path / "small.tflite").read_bytes(), 0)
    assert [len(sg.operators) for sg in small.subgraphs] == [1]
    assert "Custom operators are currently not supported" in _repro(tmp_path / "small.repro.py").stderr


def test_an_unsupported_onnx_op_is_reduced_to_that_node(onnx_import):
    d, proc = onnx_import
    assert proc.returncode == 0, proc.stderr
    assert "10 → 1 (1-minimal)" in proc.stdout
    assert _kept(d / "small.report.md") == [(5, "LpNormalization")]
    assert "operator LpNormalization is not supported by TVM's ONNX frontend" in (d / "small.report.md").read_text()


def test_the_reduced_onnx_loads_in_onnxruntime_and_checks(onnx_import):
    import onnx
    import onnxruntime as ort

    d, _ = onnx_import
    model = onnx.load(d / "small.onnx")
    onnx.checker.check_model(model, full_check=True)
    assert model.opset_import[0].version == 17
    sess = ort.InferenceSession(str(d / "small.onnx"))
    (inp,) = sess.get_inputs()
    assert inp.name == "g0" and inp.shape == [1, 4, 8, 8]
    (out,) = sess.run(None, {"g0": np.ones((1, 4, 8, 8), np.float32)})
    assert out.shape == (1, 4, 8, 8)


def test_the_onnx_repro_fails_the_same_way_in_a_fresh_process(onnx_import):
    d, _ = onnx_import
    assert "# Imports numpy, tvm and onnx (and Python's own modules)" in (d / "small.repro.py").read_text()
    proc = _repro(d / "small.repro.py")
    assert proc.returncode != 0
    assert "LpNormalization" in proc.stderr


def test_a_compile_failure_in_a_pass_is_reduced_to_the_node_that_triggers_it(onnx_compile):
    d, proc = onnx_compile
    assert proc.returncode == 0, proc.stderr
    assert "10 → 1 (1-minimal)" in proc.stdout
    assert "ValueError during compile in pass PlantedCheck" in proc.stdout
    assert _kept(d / "small.report.md") == [(4, "Sigmoid")]
    repro = _repro(d / "small.repro.py")
    assert repro.returncode != 0
    assert "ValueError: PlantedCheck: sigmoid is not allowed here" in repro.stderr


def test_a_crash_in_a_pass_is_reduced(tmp_path):
    from tests.tflite_builder import chain

    chain(8, tmp_path / "big.tflite")
    proc = _reduce(tmp_path / "big.tflite", tmp_path / "small.tflite", "--pipeline", f"{PLANTED}:crash_on_softmax")
    assert proc.returncode == 0, proc.stderr
    assert "8 → 1 (1-minimal)" in proc.stdout and "crash (SIGSEGV) during compile in pass PlantedCrash" in proc.stdout
    assert _kept(tmp_path / "small.report.md") == [(7, "SOFTMAX")]
    repro = _repro(tmp_path / "small.repro.py")
    assert repro.returncode == -signal.SIGSEGV


def test_a_hang_is_reduced_under_a_small_timeout(tmp_path):
    from tests.tflite_builder import chain

    chain(8, tmp_path / "big.tflite")
    proc = _reduce(
        tmp_path / "big.tflite",
        tmp_path / "small.tflite",
        "--timeout",
        "15",
        "--pipeline",
        f"{PLANTED}:hang_on_softmax",
    )
    assert proc.returncode == 0, proc.stderr
    assert "hang (timeout) during compile in pass PlantedHang" in proc.stdout
    assert _kept(tmp_path / "small.report.md") == [(7, "SOFTMAX")]
    out = subprocess.run(["pgrep", "-f", str(tmp_path)], capture_output=True, text=True)
    assert out.stdout == ""  # no probe left running


def test_a_model_that_does_not_fail_has_nothing_to_reduce(tmp_path):
    from tests.tflite_builder import chain

    chain(6, tmp_path / "ok.tflite")
    proc = _reduce(tmp_path / "ok.tflite", tmp_path / "small.tflite")
    assert proc.returncode == 0, proc.stderr
    assert "does not fail on it (nothing to reduce)" in proc.stdout
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ok.tflite"]


def test_pt2_and_impossible_requests_are_refused_with_one_message(tmp_path):
    (tmp_path / "m.pt2").write_bytes(b"PK")
    proc = run_cli("reduce", tmp_path / "m.pt2", "-o", tmp_path / "s.pt2")
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1 and "cannot be cut into sub-models" in proc.stderr
    onnx_unsupported(tmp_path / "m.onnx")
    proc = run_cli("reduce", tmp_path / "m.onnx", "-o", tmp_path / "s.onnx", "--until", "diverge", "--target", "cuda")
    assert proc.returncode == 2 and "--until diverge runs the model here: use --target llvm or c" in proc.stderr
    proc = run_cli("reduce", tmp_path / "m.onnx", "-o", tmp_path / "s.tflite")
    assert proc.returncode == 2 and "the reduced model is a .onnx" in proc.stderr


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_ctrl_c_leaves_the_best_so_far_named_partial(tmp_path, sig):
    """Ctrl-C at a terminal, SIGTERM from the editor's Cancel: the best so far stays. (The
    reduce of this small model may finish before the signal lands on a loaded machine: then
    it runs again, up to three times.)"""
    onnx_unsupported(tmp_path / "big.onnx", op="Softsign")
    for attempt in range(3):
        out = tmp_path / f"run{attempt}"
        out.mkdir()
        proc = subprocess.Popen(
            [
                *CLI,
                "reduce",
                str(tmp_path / "big.onnx"),
                "-o",
                str(out / "s.onnx"),
                "--jobs",
                "2",
                "--progress",
                "json",
                "--pipeline",
                f"{PLANTED}:slow_raise_on_sigmoid",
            ],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for line in proc.stdout:
            event = json.loads(line)
            if event["phase"] == "best" and event["best"] < 10:
                break
        proc.send_signal(sig)
        _, err = proc.communicate(timeout=60)
        if proc.returncode == 0 and (out / "s.onnx").exists():
            continue  # it finished before the signal came
        assert proc.returncode == 130, err
        assert "(partial)" in err and err.count("\n") == 1
        assert (out / "s.partial.onnx").exists() and not (out / "s.onnx").exists()
        assert "# Partial reduction" in (out / "s.partial.report.md").read_text()
        return
    pytest.fail("the reduce finished before the signal three times")


def test_a_failure_that_does_not_happen_again_is_reported_as_flaky(tmp_path):
    from tests.tflite_builder import chain

    chain(5, tmp_path / "m.tflite")
    env = {**os.environ, "REDUCE_TEST_MARKER": str(tmp_path / "marker")}
    proc = run_cli(
        "reduce",
        tmp_path / "m.tflite",
        "-o",
        tmp_path / "s.tflite",
        "--jobs",
        "2",
        "--progress",
        "none",
        "--pipeline",
        f"{PLANTED}:fail_once",
        env=env,
        timeout=300,
    )
    assert proc.returncode == 2, proc.stderr
    assert "the failure is flaky" in proc.stderr and "PlantedOnce" in proc.stderr and proc.stderr.count("\n") == 1
    assert not (tmp_path / "s.tflite").exists()


def test_a_search_stopped_by_its_budget_says_it_is_not_shown_1_minimal(tmp_path):
    tflite_tensor_reshape(tmp_path / "big.tflite")
    proc = _reduce(tmp_path / "big.tflite", tmp_path / "small.tflite", "--max-probes", "2")
    assert proc.returncode == 0, proc.stderr
    assert "not shown 1-minimal: the probe budget (2) ran out" in proc.stdout
    assert "**Not shown 1-minimal**: the probe budget (2) ran out." in (tmp_path / "small.report.md").read_text()
    # Run again: the files it wrote are its own, and are replaced (issue 37 item 9).
    (tmp_path / "small.tflite").write_bytes(b"edited since")
    proc = _reduce(tmp_path / "big.tflite", tmp_path / "small.tflite", "--max-probes", "2")
    assert proc.returncode == 0, proc.stderr
    assert (tmp_path / "small.tflite").read_bytes()[4:8] == b"TFL3"


def _refused(proc, path: Path, why: str) -> None:
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.count("\n") == 1 and "Traceback" not in proc.stderr, proc.stderr
    assert f"{path}: {why}" in proc.stderr, proc.stderr


def test_reduce_follows_the_output_rules_of_compile_o(tmp_path):
    """Issue 37 item 9: a symbolic link at an output (VS Code's default name ``MODEL.reduced.EXT``
    planted as a link) was followed and its target overwritten, and ``-o`` the model itself
    replaced the model. Refused now, as ``compile -o`` refuses, before the search starts."""
    big = tmp_path / "big.tflite"
    original = tflite_tensor_reshape(big) and big.read_bytes()
    victim = tmp_path / "victim.txt"
    victim.write_text("precious")
    (tmp_path / "big.reduced.tflite").symlink_to(victim)
    _refused(
        _reduce(big, tmp_path / "big.reduced.tflite"), tmp_path / "big.reduced.tflite", "output path is a symbolic link"
    )
    (tmp_path / "side.report.md").symlink_to(victim)  # a file written beside the model
    _refused(_reduce(big, tmp_path / "side.tflite"), tmp_path / "side.report.md", "output path is a symbolic link")
    assert victim.read_text() == "precious"

    _refused(_reduce(big, big), big, f"output path is {big}, an input of this reduce")
    os.link(big, tmp_path / "hard.tflite")  # the same file by another name
    _refused(_reduce(big, tmp_path / "hard.tflite"), tmp_path / "hard.tflite", f"output path is {big}, an input")
    reference = tmp_path / "x.reference.tflite"  # where the cut reference of -o x.tflite goes
    reference.write_bytes(original)
    _refused(
        _reduce(big, tmp_path / "x.tflite", "--until", "diverge", "--reference", reference, "--target", "llvm"),
        reference,
        f"output path is {reference}, an input of this reduce",
    )
    assert big.read_bytes() == original and reference.read_bytes() == original

    (tmp_path / "mine.tflite").write_bytes(b"my own model")
    _refused(
        _reduce(big, tmp_path / "mine.tflite"),
        tmp_path / "mine.tflite",
        "exists, and tvm-explorer reduce did not write it",
    )
    (tmp_path / "notes.repro.py").write_text("# my notes")
    _refused(
        _reduce(big, tmp_path / "notes.tflite"),
        tmp_path / "notes.repro.py",
        "exists, and tvm-explorer reduce did not write it",
    )
    assert (tmp_path / "mine.tflite").read_bytes() == b"my own model"
    assert (tmp_path / "notes.repro.py").read_text() == "# my notes"
    assert not (tmp_path / "notes.tflite").exists() and not (tmp_path / "side.tflite").exists()


NUMERICS = Path(__file__).parent.parent / "numerics"


def _reduce_planted_chain(d: Path, until: str):
    """An 8-layer chain through bisect's planted pass (the second Relax ``add`` becomes
    ``subtract``), reduced ``--until`` UNTIL on llvm: the folder and the finished process."""
    from tests.tflite_builder import chain

    chain(8, d / "big.tflite")
    proc = run_cli(
        "reduce",
        d / "big.tflite",
        "-o",
        d / "small.tflite",
        "--until",
        until,
        "--target",
        "llvm",
        "--jobs",
        "2",
        "--progress",
        "none",
        "--pipeline",
        f"{NUMERICS / 'planted_pipes.py'}:with_planted_add",
    )
    return d, proc


@pytest.fixture(scope="module")
def culprit(tmp_path_factory):
    """bisect's planted pass (the second Relax ``add`` becomes ``subtract``): reduced with
    ``--until culprit``, bisect itself is the probe."""
    return _reduce_planted_chain(tmp_path_factory.mktemp("reduce-culprit"), "culprit")


def test_a_culprit_pass_is_reduced_to_the_two_adds_it_needs(culprit):
    d, proc = culprit
    assert proc.returncode == 0, proc.stderr
    assert "8 → 2 (1-minimal)" in proc.stdout
    assert "results diverge after pass PlantedAddToSubtract (relax)" in proc.stdout
    # the planted pass changes the *second* add: one ADD and the dense layer's bias add
    assert _kept(d / "small.report.md") == [(4, "ADD"), (6, "FULLY_CONNECTED")]
    # the reduced model builds: its bundle (the same pipeline) opens in the editor
    assert f"bundle:  {d / 'small.bundle'}" in proc.stdout
    assert run_cli("coverage", d / "small.bundle").returncode == 0


def test_the_culprit_repro_shows_the_divergence_with_stock_tvm(culprit):
    d, _ = culprit
    script = (d / "small.repro.py").read_text()
    assert "tvm_explorer" not in script and "planted_pipes.py" in script
    proc = _repro(d / "small.repro.py")
    assert proc.returncode != 0
    assert "AssertionError: results diverge: max abs error" in proc.stderr


@pytest.fixture(scope="module")
def diverge_add(tmp_path_factory):
    """bisect's planted pass (the second Relax ``add`` becomes ``subtract``), reduced with
    ``--until diverge``: each probe is compared per layer with LiteRT on the sub-model."""
    return _reduce_planted_chain(tmp_path_factory.mktemp("reduce-diverge"), "diverge")


def _numerics_first(bundle: Path) -> dict:
    data = json.loads((bundle / "numerics.json").read_text())
    first = data["first_divergence"]
    assert first is not None
    return next(e for e in data["layers"] if (e["subgraph"], e["op_index"]) == (first["subgraph"], first["op_index"]))


def test_a_divergence_is_reduced_to_a_layer_of_the_same_kind(diverge_add):
    d, proc = diverge_add
    assert proc.returncode == 0, proc.stderr
    assert "8 → 2 (1-minimal)" in proc.stdout
    assert "first divergent layer: ADD block1/add/output" in proc.stdout
    assert "against the LiteRT interpreter" in proc.stdout
    # the convolution's bias add is the first add, the ADD operator the second (the one changed)
    assert _kept(d / "small.report.md") == [(0, "CONV_2D"), (1, "ADD")]
    report = (d / "small.report.md").read_text()
    assert "LiteRT interpreter on small.tflite" in report and not re.search(r"probe\d", report)


def test_the_reduced_divergence_has_a_bundle_with_its_numerics(diverge_add):
    d, proc = diverge_add
    assert f"bundle:  {d / 'small.bundle'}" in proc.stdout
    assert "`small.bundle`" in (d / "small.report.md").read_text()
    assert run_cli("coverage", d / "small.bundle").returncode == 0
    layer = _numerics_first(d / "small.bundle")
    assert (layer["opcode"], layer["name"]) == ("ADD", "block1/add/output")


@pytest.fixture(scope="module")
def diverge_sigmoid(tmp_path_factory):
    """A planted pass computes every Relax sigmoid as tanh, inside a healthy 10-node ONNX graph:
    reduced with ``--until diverge``, without and with ``--reference`` (a copy of the model)."""
    d = tmp_path_factory.mktemp("reduce-diverge-onnx")
    onnx_unsupported(d / "big.onnx", op="Softsign")
    onnx_unsupported(d / "float.onnx", op="Softsign")
    common = (
        "--until",
        "diverge",
        "--target",
        "llvm",
        "--pipeline",
        f"{NUMERICS / 'planted_pipes.py'}:sigmoid_to_tanh",
    )
    plain = _reduce(d / "big.onnx", d / "small.onnx", *common)
    referenced = _reduce(d / "big.onnx", d / "ref" / "small.onnx", *common, "--reference", d / "float.onnx")
    return d, plain, referenced


def test_a_planted_numerical_fault_is_reduced_to_the_op_kind_it_touches(diverge_sigmoid):
    d, proc, _ = diverge_sigmoid
    assert proc.returncode == 0, proc.stderr
    assert "10 → 1 (1-minimal)" in proc.stdout
    assert "first divergent layer: Sigmoid /gate" in proc.stdout
    assert _kept(d / "small.report.md") == [(4, "Sigmoid")]
    report = (d / "small.report.md").read_text()
    assert report.count("first divergent layer: Sigmoid") == 2 and "onnxruntime" in report
    assert run_cli("coverage", d / "small.bundle").returncode == 0
    assert _numerics_first(d / "small.bundle")["opcode"] == "Sigmoid"


def test_with_a_reference_the_reference_is_cut_the_same_way(diverge_sigmoid):
    import onnx

    d, _, proc = diverge_sigmoid
    assert proc.returncode == 0, proc.stderr
    small = d / "ref" / "small.onnx"
    assert "10 → 1 (1-minimal)" in proc.stdout and "first divergent layer: Sigmoid /gate" in proc.stdout
    assert f"reference: {d / 'ref' / 'small.reference.onnx'}" in proc.stdout
    cut = onnx.load(str(d / "ref" / "small.reference.onnx"))
    assert [n.op_type for n in cut.graph.node] == [n.op_type for n in onnx.load(str(small)).graph.node] == ["Sigmoid"]
    report = (d / "ref" / "small.report.md").read_text()
    assert "on small.reference.onnx" in report and "`small.reference.onnx`" in report
    data = json.loads((d / "ref" / "small.bundle" / "numerics.json").read_text())
    assert data["reference_path"] == str(d / "ref" / "small.reference.onnx")
    assert _numerics_first(d / "ref" / "small.bundle")["opcode"] == "Sigmoid"


def test_a_reference_is_only_for_diverge(tmp_path):
    onnx_unsupported(tmp_path / "m.onnx")
    proc = run_cli("reduce", tmp_path / "m.onnx", "-o", tmp_path / "s.onnx", "--reference", tmp_path / "m.onnx")
    assert proc.returncode == 2 and "--reference is only used with --until diverge" in proc.stderr
    assert not (tmp_path / "s.onnx").exists()

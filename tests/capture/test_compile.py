"""``tvm-explorer compile``: real pipeline, every pass recorded, provenance to generated C."""

import json
import re

import numpy as np
import pytest
import tvm
from tvm import relax
from tvm.relax.frontend.tflite import from_tflite

from conftest import run_cli
from tvm_explorer.app.compile import compile_model
from tvm_explorer.bundle.format import SCHEMA_VERSION
from tvm_explorer.bundle.reader import Bundle
from tvm_explorer.frontends.tflite.loader import load_model


def _origins(bundle, position):
    proc = run_cli("origins", bundle, position, "--json", check=True)
    return json.loads(proc.stdout)["origins"]


def _line_of(bundle, path, pattern, nth=0):
    lines = (bundle / path).read_text().split("\n")
    hits = [i + 1 for i, line in enumerate(lines) if re.search(pattern, line)]
    assert len(hits) > nth, f"{pattern!r} not found in {path}"
    return hits[nth]


def test_bundle_layout_and_manifest(gt_model, bundles):
    out = bundles.get(gt_model, "c")
    b = Bundle(out)
    m = b.manifest
    assert m["schema_version"] == SCHEMA_VERSION and m["complete"] is True and m["target"] == "c"
    stages = [d.stage for d in b.documents]
    assert stages[0] == "model" and stages[-1] == "code"
    assert stages == sorted(stages, key=["model", "relax", "tir", "code"].index)
    names = [p["name"] for p in m["passes"]]
    for expected in (
        "import",
        "LegalizeOps",
        "FuseOps",
        "FuseTIR",
        "tirx.FlattenBuffer",
        "tirx.MakePackedAPI",
        "codegen (c)",
    ):
        assert expected in names
    assert len([p for p in m["passes"] if p["stage"] == "tir"]) >= 45
    # FoldConstant builds subgraphs internally (a whole nested TIR pipeline); none of those
    # nested passes belongs to the recorded pipeline.
    assert names.count("tirx.FlattenBuffer") == 1 and names.count("FoldConstant") == 1
    # A pass that changed nothing wrote no document: its before and after are the same file.
    unchanged = [p for p in m["passes"] if not p["changed"]]
    assert unchanged and all(p["before"] == p["after"] for p in unchanged)
    written = {d.path for d in b.documents}
    assert all(p["after"] in written for p in m["passes"])
    assert not any(p.name.startswith(".") for p in out.parent.iterdir() if p.name.startswith(f".{out.name}"))


def test_ground_truth_origins_in_generated_c(gt_model, bundles):
    out = bundles.get(gt_model, "c")
    c = "code/module.c"
    conv = _line_of(out, c, r"conv2d_nhwc_intermediate\w*\[\w+\] = \(conv2d_nhwc")
    assert [o["opcode"] for o in _origins(out, f"{c}:{conv}")] == ["CONV_2D"]
    dense = _line_of(out, c, r"matmul_intermediate\w*\[\w+\] = \(matmul")
    assert [o["opcode"] for o in _origins(out, f"{c}:{dense}")] == ["FULLY_CONNECTED"]
    relu = _line_of(out, c, r"compute_intermediate\[\w+\] = \(\(v_\) > ")
    got = _origins(out, f"{c}:{relu}")
    assert [(o["opcode"], o["is_output"]) for o in got] == [("RELU", True)]
    # The conv bias add and the ADD layer share one deduplicated PrimFunc, yet after fusion
    # each copy knows its own layer.
    adds = [
        i + 1
        for i, line in enumerate((out / c).read_text().split("\n"))
        if re.search(r"conv2d_nhwc_intermediate\w*\[\w+\] = \(conv2d_nhwc_intermediate\w*\[\w+\] \+ param_\d\[", line)
    ]
    assert [[o["opcode"] for o in _origins(out, f"{c}:{n}")] for n in adds] == [["CONV_2D"], ["ADD"]]


def test_ground_truth_origins_in_relax_and_tir(gt_model, bundles):
    out = bundles.get(gt_model, "c")
    b = Bundle(out)
    first = next(d.path for d in b.documents if d.stage == "relax")
    line = _line_of(out, first, r"= R\.nn\.relu\(")
    assert [(o["opcode"], o["is_output"]) for o in _origins(out, f"{first}:{line}")] == [("RELU", True)]
    final_tir = [d.path for d in b.documents if d.stage == "tir"][-1]
    line = _line_of(out, final_tir, r"matmul_intermediate\w*\[\w+\] = matmul")
    assert [o["opcode"] for o in _origins(out, f"{final_tir}:{line}")] == ["FULLY_CONNECTED"]


@pytest.mark.parametrize(
    "name",
    ["mobilenet_v1_fp32", "small_cnn_int8", "mobilenet_v3_small_int8", "text_lstm_fp32", "tiny_transformer_fp32"],
)
def test_every_relax_binding_and_tir_store_attributed_after_every_pass(models_dir, bundles, name):
    out = bundles.get(models_dir / f"{name}.tflite", "c")
    proc = run_cli("coverage", out, "--json", check=True)
    passes = json.loads(proc.stdout)["passes"]
    assert len(passes) > 60
    for p in passes:
        assert p["units"] > 0 or p.get("note"), p
        assert p["attributed"] == p["units"], p
        if p["stage"] == "relax":
            assert p["tir_attributed"] == p["tir_units"], p
    code = [p for p in passes if p["stage"] == "code"]
    assert code and code[0]["units"] > 20


def test_generated_c_store_lines_are_all_indexed(models_dir, bundles):
    """Coverage counts what the matcher recognised: check it recognised every store line."""
    out = bundles.get(models_dir / "mobilenet_v1_fp32.tflite", "c")
    b = Bundle(out)
    text = b.text("code/module.c")
    index = b.index("code/module.c")
    lines = text.split("\n")
    starts = np.cumsum([0] + [len(line) + 1 for line in lines])
    store = re.compile(r"^\s+\(?\*?\(?\(?[A-Za-z_]\w*(\s*\*\))?\)?\)?\s*\w*(\[[^\]]+\])+\s*=[^=]")
    in_loop = 0
    checked = 0
    for i, line in enumerate(lines):
        if line.lstrip().startswith("for ("):
            in_loop += 1
        if in_loop and store.match(line) and not line.lstrip().startswith(("int", "float", "void")):
            rng = index.at(int(starts[i]) + len(line) - len(line.lstrip()))
            assert rng is not None and rng.kind == "stmt" and rng.origin_set, (i + 1, line)
            checked += 1
    assert checked > 20


def test_same_outputs_as_stock_build(gt_model, models_dir):
    """Provenance changes spans only: the built module computes exactly what stock TVM does."""
    for model_path in (gt_model, models_dir / "small_cnn_int8.tflite"):
        model = load_model(model_path)
        ours = compile_model(model_path, None, "llvm").executable
        target = tvm.target.Target("llvm")
        with tvm.transform.PassContext(opt_level=3):
            stock = tvm.compile(
                from_tflite(model.model), target, relax_pipeline=relax.backend.cpu_generic.get_default_pipeline(target)
            )
        inp = model.subgraphs[0].inputs[0]
        rng = np.random.default_rng(0)
        if inp.dtype.startswith("int") or inp.dtype.startswith("uint"):
            info = np.iinfo(inp.dtype)
            data = rng.integers(info.min, info.max, size=inp.shape, dtype=inp.dtype)
        else:
            data = rng.standard_normal(inp.shape).astype(inp.dtype)
        results = []
        for ex in (ours, stock):
            vm = relax.VirtualMachine(ex, tvm.cpu())
            results.append(vm["main"](tvm.runtime.tensor(data)).numpy())
        assert results[0].dtype == results[1].dtype
        assert np.array_equal(results[0], results[1])


def test_llvm_target_maps_generated_functions(gt_model, bundles):
    out = bundles.get(gt_model, "llvm")
    b = Bundle(out)
    assert b.manifest["target"] == "llvm"
    index = b.index("code/host.ll")
    funcs = [r for r in index.ranges if r.kind == "primfunc"]
    assert funcs and all(r.origin_set for r in funcs)
    text = b.text("code/host.ll")
    dense = next(r for r in funcs if "matmul" in r.key)
    assert text[dense.start : dense.end].startswith("define")
    assert {b.layers[l].opcode for l, _ in b.origin_sets[dense.origin_set]} == {"FULLY_CONNECTED"}


def test_no_spans_is_a_plain_stock_compile(gt_model, tmp_path):
    out = tmp_path / "b"
    proc = run_cli("compile", gt_model, "-o", out, "--no-spans")
    assert proc.returncode == 0, proc.stderr
    assert "span filling off" in proc.stdout and not out.exists()


def test_kept_compile_indexes_generated_code_on_demand(gt_model, bundles):
    """Without a bundle the generated C is indexed only when coverage is asked for, and then
    says exactly what the bundle's codegen entry says."""
    result = compile_model(gt_model, None, "c")
    assert result.bundle is None and result._coverage is None
    entry = next(p for p in Bundle(bundles.get(gt_model, "c")).manifest["passes"] if p["name"] == "codegen (c)")
    assert result.coverage == {"c": {"units": entry["units"], "attributed": entry["attributed"]}}
    assert entry["units"] > 0

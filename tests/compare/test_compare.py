"""``tvm-explorer compare``: same model across targets and options (matched by layer), fp32 vs
int8 of one network (matched by TF layer name), unrelated models refused, costs read."""

from __future__ import annotations

import json
import shutil
from collections import Counter

import pytest
from tests.conftest import run_cli

from tvm_explorer.compare.compare import compare


def _json(a, b) -> dict:
    proc = run_cli("compare", a, b, "--json")
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def test_c_versus_cuda_every_layer_matched_and_changed(models_dir, bundles):
    model = models_dir / "small_cnn_fp32.tflite"
    c, cuda = bundles.get(model, "c"), bundles.get(model, "cuda")
    got = _json(c, cuda)
    assert got["matched_by"] == "sha256"
    assert len(got["layers"]) == 8 and got["unmatched"] == {"a": [], "b": []}
    for row in got["layers"]:
        assert set(row) >= {"subgraph", "op_index", "opcode", "name", "a", "b", "changed"}
        assert row["changed"] is True
        assert row["a"]["kernels"] and row["b"]["kernels"]
        assert row["a"]["code_lines"] > 0 and row["b"]["code_lines"] > 0
    conv = got["layers"][0]
    assert conv["opcode"] == "CONV_2D" and conv["name"] == "small_cnn_1/conv2d_1"
    assert conv["a"]["kernels"] == conv["b"]["kernels"] == ["fused_conv2d_add_relu"]
    # The same bundle against itself: nothing changed (changed is not always true).
    same = compare(c, c)
    assert len(same.pairs) == 8 and not any(r["changed"] for r in same.to_json()["layers"])


def test_default_versus_exact_origins(models_dir, bundles):
    model = models_dir / "mobilenet_v1_fp32.tflite"
    shared, exact = bundles.get(model, "c"), bundles.get(model, "c", "--exact-origins")
    result = compare(shared, exact)
    rows = result.to_json()["layers"]
    assert result.matched_by == "sha256" and len(rows) == 30
    assert not result.only_a and not result.only_b
    users = Counter(k for r in rows for k in r["a"]["kernels"])
    shared_rows = [r for r in rows if any(users[k] > 1 for k in r["a"]["kernels"])]
    assert len(shared_rows) >= 10  # mobilenet_v1 repeats identical blocks
    b_users = Counter(k for r in rows for k in r["b"]["kernels"])
    for r in shared_rows:
        # each layer that shared a kernel now has its own clone, with the same code
        assert r["kernels_changed"] is True, r
        assert all(b_users[k] == 1 for k in r["b"]["kernels"]), r
    assert not any(r["changed"] for r in rows)  # cloning changes names only
    # the text table says the same
    proc = run_cli("compare", shared, exact)
    assert proc.returncode == 0 and "30 layers matched, 0 with changed code" in proc.stdout
    assert "--exact-origins" in proc.stdout.split("\n")[1]


def test_fp32_versus_int8_matched_by_layer_name(models_dir, bundles):
    fp32 = bundles.get(models_dir / "small_cnn_fp32.tflite", "c")
    int8 = bundles.get(models_dir / "small_cnn_int8.tflite", "c")
    got = _json(fp32, int8)
    assert got["matched_by"] == "name"
    assert got["a_info"]["sha256"] != got["b_info"]["sha256"]
    assert [(r["op_index"], r["opcode"]) for r in got["layers"]] == [
        (0, "CONV_2D"),
        (1, "MAX_POOL_2D"),
        (2, "CONV_2D"),
        (3, "MAX_POOL_2D"),
        (4, "RESHAPE"),
        (5, "FULLY_CONNECTED"),
        (6, "FULLY_CONNECTED"),
        (7, "SOFTMAX"),
    ]
    assert got["layers"][5]["name"] == "small_cnn_1/dense_1"
    # int8 code differs everywhere but in the reshape: its own lines are one copy loop either
    # way (the dequantize fused into its kernel is the next layer's code)
    assert [r["op_index"] for r in got["layers"] if not r["changed"]] == [4]
    assert "quantize" in " ".join(got["layers"][0]["b"]["kernels"])
    proc = run_cli("compare", fp32, int8)
    assert "layers matched by TF layer name and opcode" in proc.stdout
    assert "small_cnn_1/conv2d_1" in proc.stdout


def test_unrelated_models_say_so(models_dir, bundles):
    a = bundles.get(models_dir / "small_cnn_fp32.tflite", "c")
    b = bundles.get(models_dir / "mobilenet_v1_fp32.tflite", "c")
    proc = run_cli("compare", a, b)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert "are not of one model or network" in proc.stderr and "no layer" in proc.stderr
    assert proc.stdout == ""


def test_costs_are_read_when_present(models_dir, bundles, tmp_path):
    src = bundles.get(models_dir / "small_cnn_fp32.tflite", "c")
    a = tmp_path / "a.bundle"
    shutil.copytree(src, a)
    costs = json.loads((a / "costs.json").read_text())  # the real one, as if profiled
    costs["total_ms"] = 2.0
    for lay in costs["layers"]:
        lay.update(time_ms=None, share=None, flops=None)
        if lay["op_index"] == 0:
            lay.update(time_ms=1.25, share=0.6, code_lines=357, workspace_bytes=0)
    (a / "costs.json").write_text(json.dumps(costs))
    src = tmp_path / "b.bundle"  # B without costs (as a bundle of an older version)
    shutil.copytree(bundles.get(models_dir / "small_cnn_fp32.tflite", "c"), src)
    (src / "costs.json").unlink(missing_ok=True)
    got = _json(a, src)
    assert got["layers"][0]["a"]["costs"] == {"time_ms": 1.25, "share": 0.6, "workspace_bytes": 0, "code_lines": 357}
    assert "costs" not in got["layers"][0]["b"] and "time_ms" not in got["layers"][1]["a"]["costs"]
    table = run_cli("compare", a, src).stdout
    assert "A ms" in table and "1.250" in table
    (a / "costs.json").write_text("{not json")  # damaged costs never break a comparison
    assert "costs" not in _json(a, src)["layers"][0]["a"]


def test_layer_code_is_its_computing_lines_as_the_costs_count_them(models_dir, bundles):
    model = models_dir / "small_cnn_fp32.tflite"
    c, cuda = bundles.get(model, "c"), bundles.get(model, "cuda")
    got = _json(c, cuda)
    for side, bundle in (("a", c), ("b", cuda)):
        proc = run_cli("costs", bundle, "--json")
        assert proc.returncode == 0, proc.stderr
        lens = {lay["op_index"]: lay["code_lines"] for lay in json.loads(proc.stdout)["layers"]}
        # the costs lens's "20 C lines", not the 360 lines of the functions
        assert {r["op_index"]: r[side]["code_lines"] for r in got["layers"]} == lens
    conv = compare(c, cuda).pair(0, 2)[0]
    assert conv.code_lines == 20
    text = conv.text()
    assert "num_args" not in text and "TVMFFIErrorSetRaised" not in text
    assert text.split("\n")[1].lstrip().startswith("for (")
    assert "conv2d_nhwc_intermediate[cse_v2] = (conv2d_nhwc_intermediate[cse_v2] +" in text


def test_c_versus_llvm_compares_like_with_like(bundles):
    """Issue 38, item 12: C lines and LLVM IR lines are not one measure. Across code kinds
    the comparison gives kernels, time and workspace, says "different code kinds", and has no
    layer diff; within a kind, every tool counts code lines one way."""
    from tests.conftest import MODELS

    from tvm_explorer.bundle.reader import Bundle
    from tvm_explorer.lsp.features.compare import BundleComparisons
    from tvm_explorer.lsp.protocol import CompareLayerCodeParams, RequestFailed

    model = MODELS / "mobilenet_v1_fp32.tflite"
    # the session's bundles: tests/costs/test_table_names.py and test_numerics.py read them too
    c, llvm = bundles.get(model, "c"), bundles.get(model, "llvm", "--numerics")
    got = _json(c, llvm)
    assert got["code_kinds"] == {"a": "c", "b": "ll"} and got["code_compared"] is False
    assert all(row["changed"] is None for row in got["layers"])
    text = run_cli("compare", c, llvm, check=True).stdout
    assert "different code kinds (A: C, B: LLVM IR)" in text
    assert "A lines" not in text and "changed" not in text
    assert "A workspace" in text and "A kern" in text
    # the --fail-on gate: a code rule cannot be judged; workspace still is
    proc = run_cli("compare", c, llvm, "--fail-on", "code>+1%")
    assert proc.returncode == 2 and "different code kinds (A: C, B: LLVM IR)" in proc.stderr
    proc = run_cli("compare", c, llvm, "--fail-on", "workspace>+0%", "--format", "json")
    assert proc.returncode in (0, 6), proc.stderr
    gate = json.loads(proc.stdout)["gate"]
    assert any("code size not compared" in note for note in gate["notes"])
    assert all(lay["metrics"]["code"]["before"] is None for lay in gate["layers"])
    # no layer diff between C and LLVM IR
    with pytest.raises(RequestFailed, match=r"different code kinds \(A: C, B: LLVM IR\)"):
        BundleComparisons(None).layer_code(
            CompareLayerCodeParams(a=str(c), b=str(llvm), subgraph=0, op_index=0, side="a")
        )
    # one count of code lines: compare's is what `costs` shows, for LLVM IR as for C
    for bundle in (c, llvm):
        costs = json.loads(run_cli("costs", bundle, "--json", check=True).stdout)
        lens = {lay["op_index"]: lay["code_lines"] for lay in costs["layers"]}
        same = _json(bundle, bundle)
        assert same["code_compared"] is True
        assert {r["op_index"]: r["a"]["code_lines"] for r in same["layers"]} == lens
        gate = json.loads(
            run_cli("compare", bundle, bundle, "--fail-on", "code>+0%", "--format", "json", check=True).stdout
        )["gate"]
        assert {lay["op_index"]: lay["metrics"]["code"]["before"] for lay in gate["layers"]} == lens
        assert gate["model"]["metrics"]["code"]["before"] == Bundle(bundle).costs()["totals"]["code_lines"]

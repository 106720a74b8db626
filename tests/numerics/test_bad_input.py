"""compile --numerics with bad input: one message naming the file and what is wrong."""

from __future__ import annotations

import json

import numpy as np
import pytest

from conftest import MODELS, run_cli
from numerics.runs import compile_llvm, fails


def test_inputs_with_a_wrong_shape(gt_model, tmp_path):
    npz = tmp_path / "x.npz"
    np.savez(npz, input=np.zeros((1, 4, 4, 3), np.float32))
    out = tmp_path / "b"
    fails(
        compile_llvm(gt_model, out, "--numerics", "--inputs", npz),
        str(npz),
        "'input'",
        "[1, 4, 4, 3]",
        "[1, 8, 8, 3]",
    )
    assert not out.exists()


def test_inputs_with_a_wrong_name_or_dtype(gt_model, tmp_path):
    npz = tmp_path / "x.npz"
    np.savez(npz, image=np.zeros((1, 8, 8, 3), np.float32), other=np.zeros(1))
    fails(
        run_cli("compile", gt_model, "-o", tmp_path / "b", "--numerics", "--inputs", npz),
        "no array for model input 'input'",
    )
    np.savez(npz, input=np.zeros((1, 8, 8, 3), np.float64))
    fails(run_cli("compile", gt_model, "-o", tmp_path / "b", "--numerics", "--inputs", npz), "dtype float64", "float32")


def test_inputs_that_are_not_an_npz(gt_model, tmp_path):
    bad = tmp_path / "x.npz"
    bad.write_text("not a zip")
    fails(
        run_cli("compile", gt_model, "-o", tmp_path / "b", "--numerics", "--inputs", bad),
        str(bad),
        "not a readable .npz",
    )
    fails(
        run_cli("compile", gt_model, "-o", tmp_path / "b", "--numerics", "--inputs", tmp_path / "missing.npz"),
        "missing.npz: no such inputs file",
    )


def test_reference_of_another_graph(gt_model, tmp_path):
    fails(
        run_cli(
            "compile", gt_model, "-o", tmp_path / "b", "--numerics", "--reference", MODELS / "small_cnn_fp32.tflite"
        ),
        "small_cnn_fp32.tflite: no tensor named 'input'",
        "same graph",
    )


def test_reference_with_a_different_shape(gt_model, tmp_path):
    from tests.tflite_builder import GraphBuilder

    g = GraphBuilder()
    x = g.input("input", [1, 8, 8, 3])
    y = g.conv2d(x, filters=2, kernel=3, name="conv")  # 2 filters instead of 4
    g.output(y)
    ref = tmp_path / "other.tflite"
    ref.write_bytes(g.build())
    fails(
        run_cli("compile", gt_model, "-o", tmp_path / "b", "--numerics", "--reference", ref),
        "tensor 'conv/output'",
        "[1, 6, 6, 2]",
        "[1, 6, 6, 4]",
    )


def test_numerics_needs_a_cpu_target_and_options_need_numerics(gt_model, tmp_path):
    fails(run_cli("compile", gt_model, "-o", tmp_path / "b", "--target", "cuda", "--numerics"), "--target llvm or c")
    fails(
        run_cli("compile", gt_model, "-o", tmp_path / "b", "--reference", gt_model),
        "--reference is only used with --numerics",
    )


def test_query_of_a_bundle_without_numerics(bundles, gt_model):
    fails(run_cli("numerics", bundles.get(gt_model, "c")), "no numerics recorded")


@pytest.mark.parametrize(
    "damage, message",
    [
        (lambda d: d.update(mode="sideways"), "'mode' must be one of"),
        (lambda d: d["layers"][0].update(max_abs="big"), "layer entry 0: 'max_abs' must be a number"),
        (lambda d: d["layers"][0].update(op_index=99), "names op 99"),
        (lambda d: d.update(first_divergence=[1]), "'first_divergence' must be"),
    ],
)
def test_damaged_numerics_json_is_refused_on_load(numerics_bundle, tmp_path, damage, message):
    import shutil

    out = tmp_path / "b"
    shutil.copytree(numerics_bundle, out)
    data = json.loads((out / "numerics.json").read_text())
    damage(data)
    (out / "numerics.json").write_text(json.dumps(data))
    fails(run_cli("numerics", out), "numerics.json", message)


@pytest.fixture(scope="module")
def numerics_bundle(gt_model, tmp_path_factory):
    out = tmp_path_factory.mktemp("nb") / "gt.bundle"
    compile_llvm(gt_model, out, "--numerics", check=True)
    return out

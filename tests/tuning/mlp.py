"""The tiny model the tuning tests compile: a 2-layer MLP (MatMul → Relu → MatMul) as ONNX,
built here, and its compile with ``--tune``. ``scripts/make_tuning_db.py`` tunes it once into
tests/models/tuning-db-mlp/."""

from pathlib import Path

import numpy as np


def write_mlp(path, rows: int = 4) -> Path:
    """The MLP with ``rows`` input rows (the shipped database was tuned for 4: another count is
    another shape, a database miss)."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(0)
    w1 = numpy_helper.from_array(rng.standard_normal((16, 32)).astype("float32"), "w1")
    w2 = numpy_helper.from_array(rng.standard_normal((32, 8)).astype("float32"), "w2")
    nodes = [
        helper.make_node("MatMul", ["x", "w1"], ["h"], name="fc1"),
        helper.make_node("Relu", ["h"], ["r"], name="relu1"),
        helper.make_node("MatMul", ["r", "w2"], ["y"], name="fc2"),
    ]
    graph = helper.make_graph(
        nodes,
        "mlp",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [rows, 16])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [rows, 8])],
        [w1, w2],
    )
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], producer_name="tests"), str(path))
    return Path(path)


def compile_tuned(model, out, trials, *options, target="llvm", check=True):
    """``tvm-explorer compile MODEL --target TARGET --tune TRIALS OPTIONS -o OUT``: the finished
    process (a failure raises unless ``check`` is false)."""
    from tests.cli_runner import run_cli

    return run_cli("compile", model, "--target", target, "--tune", trials, *options, "-o", out, check=check)

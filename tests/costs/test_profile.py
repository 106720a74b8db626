"""Measured run time per layer (``compile --profile``) on a model built so that one layer
dominates, through the real CLI, TVM and the system C compiler."""

from __future__ import annotations

import json
import re

import pytest
from tests.conftest import run_cli
from tests.costs.conftest import check_times

from tvm_explorer.bundle.reader import Bundle


def _costs(bundle) -> dict:
    proc = run_cli("costs", bundle, "--json", check=True)
    return json.loads(proc.stdout)


@pytest.mark.parametrize("target", ["c", "llvm"])
def test_dominant_dense_ranks_first_and_times_add_up(profiled, dense_model, target):
    bundle = profiled.get(dense_model, target)
    check_times(Bundle(bundle).costs())
    top = _costs(bundle)["layers"][0]  # the command's table, sorted by time
    assert top["opcode"] == "FULLY_CONNECTED" and top["name"] == "big_dense/output"


@pytest.mark.parametrize("target", ["c"])
def test_shared_kernels_are_split_never_counted_twice(profiled, dense_model, target):
    full = Bundle(profiled.get(dense_model, target)).costs()
    kernels = {k["name"]: k for k in full["kernels"]}
    shared = [k for k in full["kernels"] if k["shared"]]
    assert shared, "the dense layer's epilogue (ADD, RELU, MUL) fuses into its kernel"
    # Every kernel call's time goes once to the layers it served: per kernel, the layers'
    # parts add up to the kernel's time, and all layers to the calls' times.
    per_kernel: dict[str, float] = {}
    for call in full["calls"]:
        if not call["builtin"]:
            per_kernel[call["kernel"]] = per_kernel.get(call["kernel"], 0.0) + call["median_ms"]
    for name, t in per_kernel.items():
        assert kernels[name]["time_ms"] == pytest.approx(t, abs=1e-3)
    layer_sum = sum(lay["time_ms"] for lay in full["layers"])
    call_sum = sum(c["median_ms"] for c in full["calls"] if c["layers"])
    assert layer_sum == pytest.approx(call_sum, rel=1e-3, abs=1e-3)
    for k in shared:
        users = [lay for lay in full["layers"] if k["name"] in lay["kernels"]]
        assert len(users) == len(k["layers"]) > 1
        assert all(k["name"] in lay["shared_kernels"] for lay in users)
    # The dense layer gets most of its fused kernel: the matmul is the kernel's work.
    dense = next(lay for lay in full["layers"] if lay["opcode"] == "FULLY_CONNECTED")
    fused = kernels[dense["kernels"][0]]
    assert dense["time_ms"] > 0.9 * fused["time_ms"]


def test_top_layer_is_stable_across_two_runs(profiled, dense_model):
    first = _costs(profiled.get(dense_model, "llvm", run=0))["layers"][0]
    second = _costs(profiled.get(dense_model, "llvm", run=1))["layers"][0]
    assert (first["op_index"], first["opcode"]) == (second["op_index"], second["opcode"])


def test_cli_table_and_sorting(profiled, dense_model):
    bundle = profiled.get(dense_model, "c")
    text = run_cli("costs", bundle, check=True).stdout
    rows = [ln for ln in text.splitlines() if ln.strip().startswith("1 ")]
    assert "FULLY_CONNECTED big_dense/output" in rows[0]
    assert "ms per run" in text and "Compile time" in text and "shared kernel" in text
    by_code = _costs_sorted(bundle, "code")
    assert [lay["code_lines"] for lay in by_code] == sorted((lay["code_lines"] for lay in by_code), reverse=True)
    by_memory = _costs_sorted(bundle, "memory")
    assert [lay["workspace_bytes"] for lay in by_memory] == sorted(
        (lay["workspace_bytes"] for lay in by_memory), reverse=True
    )


def _costs_sorted(bundle, by):
    return json.loads(run_cli("costs", bundle, "--json", "--sort", by, check=True).stdout)["layers"]


def test_onnx_layers_are_called_nodes(tmp_path):
    """An ONNX model's layers are graph nodes: the compile summary and the costs table say
    ``node N``, as the model document and numerics do (``op N`` is a TFLite operator)."""
    from tests.frontends.onnx_graphs import conv_block

    conv_block(tmp_path / "block.onnx")
    out = tmp_path / "block.bundle"
    proc = run_cli(
        "compile", tmp_path / "block.onnx", "-o", out, "--target", "llvm", "--profile", "--repeat", "2", check=True
    )
    assert "slowest layer: node " in proc.stdout, proc.stdout
    table = run_cli("costs", out, check=True).stdout
    layers = [ln.split()[1] for ln in table.splitlines() if re.match(r"^\s*\d+\s+(node|op) \d+ ", ln)]
    assert layers == ["node"] * 5, table

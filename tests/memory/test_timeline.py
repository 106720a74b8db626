"""The memory timeline of real compiles (real TVM), against peaks computed by hand: a chain
of known tensor sizes, a residual branch that keeps a tensor alive, storage reuse, a view
that keeps its input alive, dynamic shapes; and the static figures against a measured run."""

from __future__ import annotations

import numpy as np
import pytest

from tvm_explorer.bundle.reader import Bundle
from tvm_explorer.bundle.sections.memory import held_at
from tvm_explorer.memory.assemble import within
from tvm_explorer.memory.table import advice, breakdown

from .models import ROWS, MiB

KiB = 1024


def _layers(bundle: Bundle, ids) -> list[str]:
    return [bundle.layers[i].name for i in ids]


def test_a_view_keeps_the_convolution_output_alive(bundles, gt_model):
    """CONV_2D+ADD+RELU (fused, [1,6,6,4] f32 = 576 B) → RESHAPE (a view) → FULLY_CONNECTED
    ([1,5] = 20 B, the result). The reshape shares the fused kernel's storage, so that
    storage is held until the dense layer has read it: 576, 576, 596 B; the peak is 596 B at
    the last step. The convolution's padded input (3·8·8·4 = 768 B) and its product before
    the bias (576 B) are under 1 KiB each: stack, not heap."""
    b = Bundle(bundles.get(gt_model, "c"))
    m = b.memory()
    assert m is not None and m["analysed"]["pass"] == "KillAfterLastUse"
    assert [s["kind"] for s in m["steps"]] == ["kernel", "view", "kernel"]
    assert [_layers(b, s["layers"]) for s in m["steps"]] == [
        ["conv/output", "add/output", "relu/output"],
        ["flatten/output"],
        ["dense/output"],
    ]
    assert [s["live_bytes"] for s in m["steps"]] == [576, 576, 596]
    assert m["peak"] == {"step": 2, "bytes": 596, "live_bytes": 596, "scratch_bytes": 0, "unknown": 0}
    conv, out = m["tensors"]
    assert (conv["shape"], conv["bytes"], b.layers[conv["layer"]].name) == ([1, 6, 6, 4], 576, "relu/output")
    assert (conv["producer"], conv["last_use"], conv["first_step"], conv["last_step"]) == (0, 2, 0, 2)
    assert [(v["var"], _layers(b, v["layers"])) for v in conv["views"]] == [("lv4", ["flatten/output"])]
    assert out["output"] and out["to_end"] and out["bytes"] == 20 and b.layers[out["layer"]].name == "dense/output"
    kernels = {k["name"]: k for k in m["kernels"]}
    conv_kernel = kernels[m["steps"][0]["callee"]]
    assert conv_kernel["workspace_bytes"] == 0 and conv_kernel["stack_bytes"] == 768 + 576
    assert m["inputs"] == [{"name": "input", "shape": [1, 8, 8, 3], "dtype": "float32", "bytes": 768}]
    # weights 4·3·3·3, biases 4 + 4, dense 5·144 and 5: float32
    assert m["constants"] == {"count": 5, "bytes": 4 * (108 + 4 + 4 + 720 + 5)}
    assert m["measured"]["status"] == "not_requested"


def test_a_chain_reuses_a_storage_and_a_run_allocates_what_the_plan_says(chain_bundle):
    """Four 1 MiB MatMuls in a chain: a, b, c (in a's storage, a being dead), y (the result).
    Held: 1, 2, 2, 2 MiB; the peak is 2 MiB at step 1. A profiled run (llvm) allocates the
    same, within the stated tolerance, at the peak and after every kernel."""
    b = Bundle(chain_bundle)
    m = b.memory()
    assert [s["live_bytes"] for s in m["steps"]] == [1 * MiB, 2 * MiB, 2 * MiB, 2 * MiB]
    assert all(s["scratch_bytes"] == 0 for s in m["steps"])
    assert (m["peak"]["step"], m["peak"]["bytes"]) == (1, 2 * MiB)
    shared = [st for st in m["storages"] if len(st["tensors"]) > 1]
    assert len(shared) == 1 and _layers(b, shared[0]["layers"]) == ["mm_a", "mm_c"]
    assert len(m["storages"]) == 3  # a/c, b, y
    assert m["predicted"] == {"naive_peak_bytes": 2 * MiB, "pooled_bytes": 2 * MiB, "workspace_pool_bytes": 0}
    measured = m["measured"]
    assert measured["status"] == "measured", measured
    assert measured["naive_within"] and measured["pooled_within"], measured
    for step, got in zip(m["steps"], measured["steps"]):
        assert within(got, step["runtime_bytes"]), (step, got)
    assert m["reference"] is None  # onnxruntime does not say what it plans


def test_a_residual_branch_keeps_a_tensor_alive_through_the_peak(residual_bundle):
    """PyTorch: a = x@w0 (1 MiB), b = a@w1 (4 MiB), c = b@w2 (1 MiB), y = c@w3 + a (1 MiB,
    the result). ``a`` waits for the last step: held 1, 5, 6, 3 MiB, plus the last kernel's
    1 MiB product before the add. The peak is 6 MiB at step 2, where ``a`` is idle: what would
    lower it names it first."""
    b = Bundle(residual_bundle)
    m = b.memory()
    assert [s["live_bytes"] for s in m["steps"]] == [1 * MiB, 5 * MiB, 6 * MiB, 3 * MiB]
    assert [s["scratch_bytes"] for s in m["steps"]] == [0, 0, 0, 1 * MiB]
    assert (m["peak"]["step"], m["peak"]["bytes"]) == (2, 6 * MiB)
    a = m["tensors"][0]
    assert (a["shape"], a["first_step"], a["last_step"], a["last_use"]) == ([ROWS, 64], 0, 3, 3)
    assert a["layer"] is not None and b.layers[a["layer"]].opcode == "aten.mm.default"
    at_peak = breakdown(m, 2)
    assert [m["tensors"][t]["bytes"] for t in at_peak["tensors"]] == [4 * MiB, 1 * MiB, 1 * MiB]
    lower = advice(m, 2, lambda lid: b.layers[lid].name)
    assert lower[0]["kind"] == "long_lived" and lower[0]["tensor"] == a["id"], lower
    assert "held from step 0 to step 3" in lower[0]["text"] and "idle at step 2" in lower[0]["text"]
    scratch = next(x for x in lower if x["kind"] == "scratch")
    assert scratch["bytes"] == 1 * MiB and "matmul_intermediate" in scratch["text"]


def test_dynamic_sizes_at_their_bound_or_the_profiled_input(dynamic_model, tmp_path):
    """x[N, 16]: every tensor is 64·N bytes. Unbounded, sizes are unknown and said so; with
    ``tir_var_upper_bound`` N=64 the plan reserves 4 KiB per storage; profiled on inputs of
    4096 rows, N is pinned to 4096 (256 KiB per tensor), and the run agrees."""
    import tvm

    from tvm_explorer import Capture
    from tvm_explorer.costs.request import ProfileRequest

    def capture(out, bound=None, profile=None):
        with Capture.from_onnx(dynamic_model, out, profile=profile) as cap:
            mod = cap.module
            if bound is not None:
                mod["main"] = mod["main"].with_attr("tir_var_upper_bound", {"N": bound})
            target = "llvm" if profile else "c"
            cap.add_executable(tvm.compile(mod, cap.target_for(target), relax_pipeline=cap.pipeline(target)))
        return Bundle(out).memory()

    free = capture(tmp_path / "free.bundle")
    assert free["symbols"] == [{"name": "N", "value": None, "source": None}]
    assert all(t["bytes"] is None for t in free["tensors"]) and free["peak"]["unknown"] > 0

    bounded = capture(tmp_path / "bounded.bundle", bound=64)
    assert bounded["symbols"] == [{"name": "N", "value": 64, "source": "tir_var_upper_bound"}]
    assert {st["bytes"] for st in bounded["storages"]} == {64 * 64}
    assert [s["total_bytes"] for s in bounded["steps"]] == [4 * KiB, 8 * KiB, 12 * KiB + 4 * KiB]

    inputs = tmp_path / "x.npz"
    np.savez(inputs, x=np.ones((ROWS, 16), np.float32))
    pinned = capture(tmp_path / "pinned.bundle", profile=ProfileRequest(repeat=1, inputs=str(inputs)))
    assert pinned["symbols"] == [{"name": "N", "value": ROWS, "source": "inputs"}]
    quarter = 64 * ROWS  # 256 KiB
    assert [s["live_bytes"] for s in pinned["steps"]] == [quarter, 2 * quarter, 3 * quarter]
    assert pinned["peak"]["bytes"] == 4 * quarter  # a, b, y and the product before the add
    assert pinned["measured"]["status"] == "measured" and pinned["measured"]["naive_within"], pinned["measured"]
    _, alive = held_at(pinned, 2)
    assert len(alive) == 3


@pytest.mark.parametrize("step", [0, 1])
def test_held_at_agrees_with_the_step_totals(chain_bundle, step):
    m = Bundle(chain_bundle).memory()
    storages, _ = held_at(m, step)
    assert sum(st["bytes"] for st in storages) == m["steps"][step]["live_bytes"]

"""The other sides of the check: LiteRT's own arena beside TVM's plan (TFLite), a profiled
TFLite bundle's memory.json, CUDA (planned, not measured), and TVM's workspace pool replayed
as its C++ does it."""

from __future__ import annotations

from tvm_explorer.bundle.reader import Bundle
from tvm_explorer.memory.allocators import PooledAllocator, WorkspacePool


def test_a_profiled_tflite_bundle_has_the_run_and_litert_s_arena(bundles, gt_model):
    """The same compile as the hostile-sections tests (shared in a session). LiteRT's arena
    holds the input (768 B), the activations (576 B each, in place where it can), the output
    (20 B) and its convolution's im2col buffer (6·6·27 floats = 3888 B): at least the input
    and the im2col buffer, at most all of them; never the 3364 B of weights."""
    m = Bundle(bundles.get(gt_model, "llvm", "--numerics", "--profile")).memory()
    ref = m["reference"]
    assert ref["engine"].startswith("LiteRT") and "error" not in ref, ref
    assert 768 + 3888 <= ref["arena_bytes"] <= 768 + 3 * 576 + 20 + 3888 + 6 * 64  # + alignment
    assert m["measured"]["status"] == "measured" and m["measured"]["naive_within"], m["measured"]
    assert m["measured"]["steps"][1] is None  # the reshape is no kernel call
    # TFLite Micro's plan: the input and the conv's output live together (768 + 576 B), the
    # add and the relu run in place over them; what persists (tensor structs, kernels' data)
    # is its tail. It ran the model once.
    micro = ref["micro"]
    assert micro["engine"].startswith("TFLite Micro ") and "error" not in micro, micro
    assert micro["head_bytes"] == 768 + 576 and micro["arena_bytes"] == micro["head_bytes"] + micro["tail_bytes"]
    from tvm_explorer.memory.table import check_lines

    lines = check_lines(m, None)
    assert any(
        line.startswith("  TFLite Micro ") and "(1.3 KiB planned for tensors and scratch" in line for line in lines
    ), lines


def test_cuda_plans_the_same_and_lists_on_chip_buffers(bundles, models_dir):
    """No GPU is needed: the plan is read from the Relax module; each kernel's shared and local
    buffers are listed under the kernel the Relax function calls, not counted as host stack."""
    b = Bundle(bundles.get(models_dir / "small_cnn_fp32.tflite", "cuda"))
    m = b.memory()
    assert m["target"] == "cuda" and m["measured"]["status"] == "not_requested"
    conv = next(k for k in m["kernels"] if k["name"] == m["steps"][0]["callee"])
    assert {x["where"] for x in conv["buffers"]} >= {"shared"} and conv["stack_bytes"] == 0
    assert m["steps"][0]["live_bytes"] == 26 * 26 * 16 * 4


def test_the_workspace_pool_keeps_and_resizes_pages_as_tvm_does():
    """``src/runtime/workspace_pool.cc``: sizes round up to 4 KiB; a freed page is kept; a
    request larger than every free page frees the largest one and allocates anew."""
    pool = WorkspacePool()
    pool.run_kernel([("alloc", 5000, "a"), ("alloc", 100, "b"), ("free", None, "b"), ("free", None, "a")])
    assert pool.held == 8192 + 4096
    pool.run_kernel([("alloc", 8000, "c"), ("free", None, "c")])  # fits the 8 KiB page
    assert pool.held == 8192 + 4096
    pool.run_kernel([("alloc", 20000, "d"), ("alloc", 20000, "e"), ("free", None, "e"), ("free", None, "d")])
    # d: the largest free page (8 KiB) is too small: freed, 20 KiB allocated; e: the last free
    # page (4 KiB) likewise
    assert pool.held == 2 * 20480
    pooled = PooledAllocator()
    pooled.alloc(5000)
    pooled.release(5000)
    pooled.alloc(6000)  # the same 8 KiB page class: reused
    pooled.alloc(100)
    assert pooled.held == 8192 + 4096

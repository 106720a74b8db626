"""CUDA source without a GPU: kernels trace back to layers; schedules are recorded."""

import json
import re

from conftest import run_cli
from tvm_explorer.bundle.reader import Bundle


def _origins(bundle, position):
    return json.loads(run_cli("origins", bundle, position, "--json", check=True).stdout)["origins"]


def _lines(bundle, path, pattern):
    text = (bundle / path).read_text().split("\n")
    return [i + 1 for i, line in enumerate(text) if re.search(pattern, line)]


def test_cuda_kernels_trace_back_to_layers(gt_model, bundles):
    out = bundles.get(gt_model, "cuda")
    b = Bundle(out)
    assert b.manifest["target"] == "cuda"
    assert {d.path for d in b.documents if d.stage == "code"} == {"code/device.cu", "code/host.ll"}
    cu = "code/device.cu"
    # The conv accumulation (into the local register tile) is CONV_2D.
    acc = _lines(out, cu, r"conv2d_nhwc_intermediate_reindex_pad_local_ptr\[\d+\] = __")
    assert acc and all([o["opcode"] for o in _origins(out, f"{cu}:{n}")] == ["CONV_2D"] for n in acc)
    # Shared-memory copies made by the schedule serve the conv, not nothing.
    shared = _lines(out, cu, r"pad_temp_reindex_pad_shared_ptr\[.*\] = ")
    assert shared and all([o["opcode"] for o in _origins(out, f"{cu}:{n}")] == ["CONV_2D"] for n in shared)
    # The kernel's final store absorbed ADD and RELU (compute_inline): it lists them all.
    final = _lines(out, cu, r"compute_intermediate_ptr \+ .*\) = ")
    assert final
    got = {(o["opcode"], o["is_output"]) for o in _origins(out, f"{cu}:{final[0]}")}
    assert ("RELU", True) in got and {"CONV_2D", "ADD"} <= {op for op, _ in got}
    # The dense layer's reduction (rfactor + cross-thread buffer) is FULLY_CONNECTED.
    for n in _lines(out, cu, r"(matmul_intermediate_rf_local_ptr\[0\] = \(|red_buf0_ptr\)\[.*\] = )"):
        assert [o["opcode"] for o in _origins(out, f"{cu}:{n}")] == ["FULLY_CONNECTED"], n


def test_cuda_coverage_every_pass(gt_model, models_dir, bundles):
    for model in (gt_model, models_dir / "small_cnn_int8.tflite"):
        out = bundles.get(model, "cuda")
        passes = json.loads(run_cli("coverage", out, "--json", check=True).stdout)["passes"]
        names = [p["name"] for p in passes]
        assert "ApplyDefaultSchedule" in names and "tirx.SplitHostDevice" in names
        for p in passes:
            assert p["attributed"] == p["units"], p
        cuda = next(p for p in passes if p["name"] == "codegen (cuda)")
        assert cuda["units"] > 50


def test_schedule_trace_of_mobilenet_kernel(models_dir, bundles):
    out = bundles.get(models_dir / "mobilenet_v1_fp32.tflite", "cuda")
    b = Bundle(out)
    traces = b.manifest["traces"]
    assert traces
    trace = next(t for t in traces if t["primfunc"].startswith("fused_conv2d") and t["loops"])
    program = (out / trace["path"]).read_text()
    assert "def apply_trace(sch" in program and "sch.split(" in program and "sch.bind(" in program
    assert trace["rule"] in {"Matmul", "GEMV", "Reduction", "GeneralReduction", "Fallback"}
    # The kernel links to its trace, and a loop of it to the step that created it.
    index = b.index("code/device.cu")
    kernel = next(r for r in index.ranges if r.kind == "primfunc" and r.key == f"prim:{trace['primfunc']}_kernel")
    assert kernel.link == f"trace:{trace['primfunc']}:"
    loops = [r for r in index.ranges if r.kind == "loop" and kernel.start <= r.start < kernel.end and r.link]
    assert loops
    primfunc, _, step = loops[0].link[len("trace:") :].rpartition(":")
    assert primfunc == trace["primfunc"]
    line = program.split("\n")[trace["first_step_line"] - 1 + int(step)]
    assert trace["step_text"][step] == line.strip()
    assert not line.strip().startswith(("l", "b")) or "= sch." in line


def test_exact_origins_give_every_statement_one_origin(models_dir, bundles):
    shared = bundles.get(models_dir / "mobilenet_v1_fp32.tflite", "c")
    exact = bundles.get(models_dir / "mobilenet_v1_fp32.tflite", "c", "--exact-origins")

    def stmt_origin_counts(path):
        b = Bundle(path)
        counts = []
        for d in b.documents:
            if d.stage in ("tir", "code"):
                counts += [len(b.origin_sets[r.origin_set]) for r in b.index(d.path).ranges if r.kind == "stmt"]
        return counts, sum(len(b.text(d.path).split("\n")) for d in b.documents if d.stage == "code")

    shared_counts, shared_lines = stmt_origin_counts(shared)
    exact_counts, exact_lines = stmt_origin_counts(exact)
    # mobilenet_v1 repeats identical blocks: one fused PrimFunc serves five layers and says so.
    assert max(shared_counts) == 5
    assert set(exact_counts) == {1}
    assert exact_lines > shared_lines
    assert Bundle(exact).manifest["options"]["exact_origins"] is True

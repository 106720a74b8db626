"""``tvm-explorer extract``: every PrimFunc of real fp32 and int8 models becomes a script that
rebuilds, runs and checks it in a fresh interpreter; a broken kernel fails its check; bad
input gets one message."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
from tests.conftest import run_cli

from tvm_explorer.bundle.reader import Bundle
from tvm_explorer.reduce.outputs import imported_packages
from tvm_explorer.reproducers.extract import KernelFinder, extract, write

RUNNER = Path(__file__).with_name("run_scripts.py")
MODELS = ("small_cnn_fp32", "small_cnn_int8")


def run_scripts(paths: list[Path], timeout: float = 600) -> dict[str, dict]:
    """Run the scripts in one fresh interpreter (see run_scripts.py): path -> result."""
    proc = subprocess.run(
        [sys.executable, str(RUNNER), *map(str, paths)],
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=paths[0].parent,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    results = [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{")]
    return {r["path"]: r for r in results}


@pytest.mark.parametrize("target", ["c", "llvm"])
@pytest.mark.parametrize("model", MODELS)
def test_every_primfunc_reproduces_green(model, target, models_dir, bundles, tmp_path):
    bundle = bundles.get(models_dir / f"{model}.tflite", target)
    finder = KernelFinder(Bundle(bundle))
    kernels = finder.kernels()
    # On llvm (fast builds) also the PrimFuncs fusion replaced, as LegalizeOps wrote them.
    names = finder.primfuncs() if target == "llvm" else kernels
    names = [n for n in names if not (n.endswith("_kernel") and n[:-7] in kernels)]
    assert len(kernels) >= 7 and set(kernels) <= set(names)
    scripts = []
    for name in names:
        repro = extract(bundle, name)
        assert repro.kernels == [name]
        scripts.append(write(repro, tmp_path / f"{name}.py"))
        text = repro.text
        assert "tvm_explorer" not in text.split("# Run:")[1]  # needs only tvm and numpy
        assert set(imported_packages(text)) == {"numpy", "tvm"}, imported_packages(text)  # as its header says
        assert f"# Target:    {target}" in text and "# TVM:       0.27" in text
    results = run_scripts(scripts)
    assert len(results) == len(scripts)
    for script in scripts:
        got = results[str(script)]
        assert got["code"] == 0, f"{script.name}:\n{got['output'][-3000:]}"
        assert re.search(
            rf"^{re.escape(script.stem)}: OK against the reference .* us per call "
            rf"on {target}$",
            got["output"],
            re.M,
        ), got["output"]


def test_broken_kernel_fails_its_check(models_dir, bundles, tmp_path):
    bundle = bundles.get(models_dir / "small_cnn_fp32.tflite", "c")
    text = extract(bundle, "fused_conv2d_add_relu").text
    kernel, rest = text.split("class Reference:", 1)
    # The bias add becomes a subtraction: the kernel now computes something else.
    broken = kernel.replace("+ param_1[v_ax3]", "- param_1[v_ax3]", 1)
    assert broken != kernel
    good = tmp_path / "good.py"
    bad = tmp_path / "bad.py"
    good.write_text(text)
    bad.write_text(broken + "class Reference:" + rest)
    results = run_scripts([good, bad])
    assert results[str(good)]["code"] == 0, results[str(good)]["output"]
    assert results[str(bad)]["code"] == 1
    assert "fused_conv2d_add_relu: MISMATCH against the reference" in results[str(bad)]["output"]


def test_layer_kernels_and_header(models_dir, bundles, tmp_path):
    bundle = bundles.get(models_dir / "small_cnn_int8.tflite", "c")
    out = tmp_path / "layer0.py"
    proc = run_cli("extract", bundle, "--layer", "0", "-o", out)
    assert proc.returncode == 0, proc.stderr
    text = out.read_text()
    assert "# Layer(s):  op 0 CONV_2D " in text and "small_cnn" in text.split("\n")[3]
    assert "# Model:     small_cnn_int8.tflite (sha256 " in text
    assert "# Pass:      " in text and "(tir/" in text
    assert "fused_conv2d_add_quantize_tir_clip" in text
    # NAME forms: generated C function and the Relax function calling every kernel
    main = extract(bundle, "main")
    assert len(main.kernels) >= 7
    assert extract(bundle, "__tvm_ffi_max_pool2d1").kernels == ["max_pool2d1"]


def test_cuda_script_builds_source_without_gpu(models_dir, bundles, tmp_path):
    bundle = bundles.get(models_dir / "small_cnn_fp32.tflite", "cuda")
    repro = extract(bundle, "fused_conv2d_add_relu_kernel")
    assert repro.kernels == ["fused_conv2d_add_relu"]
    script = write(repro, tmp_path / "cuda.py")
    assert set(imported_packages(repro.text)) == {"numpy", "tvm"} and "needs only tvm and numpy" in repro.text
    got = run_scripts([script])[str(script)]
    assert got["code"] == 0, got["output"]
    assert "no GPU found: built the CUDA source only" in got["output"]
    assert "fused_conv2d_add_relu_kernel: present" in got["output"]


def test_bad_input_gets_one_message(models_dir, bundles, tmp_path):
    bundle = bundles.get(models_dir / "small_cnn_fp32.tflite", "c")
    proc = run_cli("extract", bundle, "fused_conv2d_ad", "-o", tmp_path / "x.py")
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert "fused_conv2d_ad: no PrimFunc" in proc.stderr and "closest: fused_conv2d_add_relu" in proc.stderr
    proc = run_cli("extract", bundle, "softmax", "--pass", "999", "-o", tmp_path / "x.py")
    assert proc.returncode == 2 and re.search(r"--pass 999: .* has passes 0–\d+", proc.stderr)
    proc = run_cli("extract", bundle, "--layer", "40", "-o", tmp_path / "x.py")
    assert proc.returncode == 2 and "--layer 40: subgraph 0" in proc.stderr and "ops 0–7" in proc.stderr
    packed = next(p["index"] for p in Bundle(bundle).manifest["passes"] if p["name"] == "tirx.MakePackedAPI")
    proc = run_cli("extract", bundle, "softmax", "--pass", packed, "-o", tmp_path / "x.py")
    assert proc.returncode == 2 and "packed arguments" in proc.stderr
    proc = run_cli("extract", bundle, "fused_conv2d_add_relu", "--pass", "1", "-o", tmp_path / "x.py")
    assert proc.returncode == 2 and "is not printed after it" in proc.stderr
    assert not (tmp_path / "x.py").exists()
    proc = run_cli("extract", tmp_path, "softmax")
    assert proc.returncode == 2 and "Traceback" not in proc.stderr


def _one_per_kind(kernels: list[str]) -> list[str]:
    """The first kernel of each kind (name without its numbers): a time-bounded set that has
    every fused pattern of the model."""
    seen, out = set(), []
    for k in kernels:
        kind = re.sub(r"\d+", "", k)
        if kind not in seen:
            seen.add(kind)
            out.append(k)
    return out


def test_int8_kernels_reproduce_green_within_one_quantization_step(models_dir, bundles, tmp_path):
    """mobilenet_v3_small_int8: every kind of kernel of the unchanged build passes its
    reproducer. A kernel whose quantize rounds differently (floor instead of round: at most
    one step, what another float summation order does) still passes, and its report is in
    quantization steps; a kernel three steps off fails."""
    bundle = bundles.get(models_dir / "mobilenet_v3_small_int8.tflite", "llvm")
    kernels = _one_per_kind(KernelFinder(Bundle(bundle)).kernels())
    assert len(kernels) >= 10
    target = "fused_conv2d9_add9_quantize15_tir_clip6_dequantize34"
    scripts = [write(extract(bundle, k), tmp_path / f"{k}.py") for k in kernels]
    text = extract(bundle, target).text
    kernel, rest = text.split("class Reference:", 1)
    rounded = "T.round(T_add_intermediate[v_i0, v_i1, v_i2, v_i3] / T.float32(0.046879526227712631))"
    assert rounded in kernel
    one_step = tmp_path / "one_step.py"
    one_step.write_text(kernel.replace(rounded, rounded.replace("T.round", "T.floor")) + "class Reference:" + rest)
    three = tmp_path / "three_steps.py"
    three.write_text(kernel.replace(rounded, f"({rounded} + T.float32(3.0))") + "class Reference:" + rest)
    results = run_scripts([*scripts, one_step, three], timeout=900)
    for script in scripts:
        got = results[str(script)]
        assert got["code"] == 0, f"{script.name}:\n{got['output'][-3000:]}"
    got = results[str(one_step)]
    assert got["code"] == 0, got["output"]
    assert re.search(
        rf"{target}: OK against the reference \(max abs diff 0\.0469 = 1 quantization "
        r"steps \(tolerance 1 step\)\)",
        got["output"],
    ), got["output"]
    got = results[str(three)]
    assert got["code"] == 1 and f"{target}: MISMATCH" in got["output"], got["output"]
    assert "= 3 quantization steps" in got["output"]

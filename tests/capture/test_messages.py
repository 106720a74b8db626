"""Every message says what actually happened (issue 18): a compile that fails at its
--memory-limit says so instead of blaming an operator; option values that are not numbers of
GiB/seconds get one argparse message, not a traceback; a model file name that is not UTF-8
compiles."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from conftest import run_cli
from tvm_explorer.bundle.reader import Bundle


def one_error(proc, code: int = 2) -> str:
    assert proc.returncode == code, (proc.returncode, proc.stderr)
    assert "Traceback" not in proc.stderr, proc.stderr
    lines = [line for line in proc.stderr.strip().split("\n") if line and "Warning" not in line]
    errors = [line for line in lines if "error: " in line]
    assert len(errors) == 1, proc.stderr
    assert all(line.startswith("usage:") or "error: " in line or line.startswith(" ") for line in lines), proc.stderr
    return errors[0]


@pytest.mark.parametrize(
    "option,value,says",
    [
        ("--memory-limit", "inf", "'inf' is not a limit"),
        ("--memory-limit", "nan", "'nan' is not a limit"),
        ("--memory-limit", "-1", "'-1' is not a limit"),
        ("--memory-limit", "lots", "'lots' is not a number of GiB"),
        ("--memory-limit", "0.2", "0.2 GiB is too small"),
        ("--timeout", "inf", "'inf' is not a number of seconds"),
        ("--timeout", "-5", "'-5' is not a number of seconds"),
    ],
)
def test_limits_that_are_not_limits_get_one_message(models_dir, tmp_path, option, value, says):
    out = tmp_path / "b"
    message = one_error(run_cli("compile", models_dir / "sine_float.tflite", "-o", out, option, value))
    assert f"argument {option}: " in message and says in message
    assert not out.exists()


def test_a_compile_that_hits_the_memory_limit_names_the_limit(models_dir, tmp_path):
    """Under 0.5 GiB mobilenet_v1's weights cannot be allocated while operator 22 is imported;
    the message used to be "operator 22 (CONV_2D) cannot be imported by TVM" alone."""
    out = tmp_path / "b"
    proc = run_cli("compile", models_dir / "mobilenet_v1_fp32.tflite", "-o", out, "--memory-limit", "0.5", timeout=300)
    message = one_error(proc)
    assert "mobilenet_v1_fp32.tflite: the compile ran out of memory at its --memory-limit of 0.5 GiB" in message
    assert "an allocation failed" in message and "--memory-limit GIB" in message
    assert not out.exists()
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".b.")]


def test_a_model_file_name_that_is_not_utf8(models_dir, tmp_path):
    name = os.fsdecode(b"m\xff\xfe.tflite")
    model = tmp_path / name
    shutil.copy(models_dir / "sine_float.tflite", model)
    out = tmp_path / "b"
    proc = run_cli("compile", model, "-o", out)
    assert proc.returncode == 0 and "Traceback" not in proc.stderr, proc.stderr
    assert "m\\xff\\xfe.tflite" in (out / "model.tflgraph").read_text(encoding="utf-8").split("\n")[0]
    assert Bundle(out).manifest["model"]["file"] == "m\\xff\\xfe.tflite"
    missing = one_error(run_cli("compile", tmp_path / os.fsdecode(b"gone\xff.tflite"), "-o", tmp_path / "c"))
    assert "gone" in missing and "no such file" in missing


# -- TVM's chatter and failures that name what failed (issue 27) --------------------------------
from conftest import MODELS  # noqa: E402

NUMERICS_TESTS = Path(__file__).resolve().parent.parent / "numerics"


def _stderr_lines(proc) -> list[str]:
    return [line for line in proc.stderr.splitlines() if line.strip()]


def test_onnx_import_failure_is_one_line_naming_the_node(tmp_path):
    """TVM's "BlockBuilder destroyed with remaining blocks!" came after our message."""
    proc = run_cli(
        "compile", MODELS / "ch_ppocr_mobile_v2.0_cls_mobile.onnx", "-o", tmp_path / "b", "--progress", "none"
    )
    assert proc.returncode == 2
    lines = _stderr_lines(proc)
    assert len(lines) == 1, proc.stderr
    assert lines[0].startswith("tvm-explorer: error: ") and "node 561 (Reshape 'Reshape@18')" in lines[0]


def test_onnx_cuda_compile_keeps_tvms_warnings_out_of_the_terminal(tmp_path):
    proc = run_cli(
        "compile",
        MODELS / "silero_vad_op18_ifless.onnx",
        "-o",
        tmp_path / "b",
        "--target",
        "cuda",
        "--progress",
        "none",
        check=True,
    )
    assert "max_shared_memory_per_block" not in proc.stderr and "Warning" not in proc.stderr, proc.stderr
    lines = _stderr_lines(proc)
    # TVM's own log lines (topi's notes on gather) are in a file, named in one line.
    assert len(lines) <= 1, proc.stderr
    if lines:
        path = lines[0].rsplit(" ", 1)[1]
        assert lines[0].startswith("note: TVM's own log lines") and "Warning" in Path(path).read_text()
        os.unlink(path)


def test_pt2_compile_prints_no_torch_warning(tmp_path):
    torch = pytest.importorskip("torch", reason="PyTorch is not installed")
    from frontends import torch_nets

    ep, _args = torch_nets.resnet_program()
    torch.export.save(ep, tmp_path / "resnet.pt2")
    proc = run_cli("compile", tmp_path / "resnet.pt2", "-o", tmp_path / "b", "--progress", "none", check=True)
    assert "Warning" not in proc.stderr and _stderr_lines(proc) == [], proc.stderr


def test_cuda_build_failure_names_the_pass_the_kernel_and_its_layer(gt_model, tmp_path):
    """A check of the user's pipeline refuses the first kernel scheduled with more than 32
    threads per block (gt's RESHAPE kernel, op 3)."""
    proc = run_cli(
        "compile",
        gt_model,
        "-o",
        tmp_path / "b",
        "--target",
        "cuda",
        "--pipeline",
        "planted_pipes:cuda_small_gpu",
        "--progress",
        "none",
        cwd=NUMERICS_TESTS,
        timeout=600,
    )
    assert proc.returncode == 2
    lines = _stderr_lines(proc)
    assert len(lines) == 1, proc.stderr
    assert "in pass VerifySmallGPU, kernel reshape (op 3 RESHAPE" in lines[0], lines[0]
    assert not (tmp_path / "b").exists()

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


@pytest.mark.parametrize("option,value,says", [
    ("--memory-limit", "inf", "'inf' is not a limit"),
    ("--memory-limit", "nan", "'nan' is not a limit"),
    ("--memory-limit", "-1", "'-1' is not a limit"),
    ("--memory-limit", "lots", "'lots' is not a number of GiB"),
    ("--memory-limit", "0.2", "0.2 GiB is too small"),
    ("--timeout", "inf", "'inf' is not a number of seconds"),
    ("--timeout", "-5", "'-5' is not a number of seconds"),
])
def test_limits_that_are_not_limits_get_one_message(models_dir, tmp_path, option, value, says):
    out = tmp_path / "b"
    message = one_error(run_cli("compile", models_dir / "sine_float.tflite", "-o", out, option, value))
    assert f"argument {option}: " in message and says in message
    assert not out.exists()


def test_a_compile_that_hits_the_memory_limit_names_the_limit(models_dir, tmp_path):
    """Under 0.5 GiB mobilenet_v1's weights cannot be allocated while operator 22 is imported;
    the message used to be "operator 22 (CONV_2D) cannot be imported by TVM" alone."""
    out = tmp_path / "b"
    proc = run_cli("compile", models_dir / "mobilenet_v1_fp32.tflite", "-o", out, "--memory-limit", "0.5",
                   timeout=300)
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

"""Bad input ends with one clear message and no bundle."""

import os

import pytest

from conftest import run_cli


def _assert_clean_failure(proc, out, *needles):
    assert proc.returncode != 0
    assert "Traceback" not in proc.stderr, proc.stderr
    lines = [line for line in proc.stderr.strip().split("\n") if "Warning" not in line]
    assert len(lines) == 1 and lines[0].startswith("tvm-explorer: error: "), proc.stderr
    for needle in needles:
        assert needle in lines[0], lines[0]
    assert not out.exists()
    assert not [p for p in out.parent.iterdir() if p.name.startswith(f".{out.name}.tmp")]


@pytest.mark.parametrize(
    "name,needles",
    [
        ("selfie_segmentation", ["operator 244", "CUSTOM:Convolution2DTransposeBias", "'segment'"]),
        ("okay_nabu", ["operator 13", "ASSIGN_VARIABLE", "stream_6/states"]),
        # DENSIFY itself converts (to a constant kept aside); the DEQUANTIZE reading it fails,
        # and the message says why.
        ("pose_detection", ["operator 9", "DEQUANTIZE", "Conv2D_dequantize2", "made by operator 8 DENSIFY"]),
    ],
)
def test_models_the_importer_rejects_name_the_operator(models_dir, tmp_path, name, needles):
    out = tmp_path / "b"
    proc = run_cli("compile", models_dir / f"{name}.tflite", "-o", out)
    _assert_clean_failure(proc, out, f"{name}.tflite", *needles)


def test_empty_truncated_and_foreign_files(models_dir, tmp_path):
    data = (models_dir / "small_cnn_fp32.tflite").read_bytes()
    cases = {
        "empty.tflite": (b"", "empty"),
        "truncated.tflite": (data[: len(data) // 3], "truncated"),
        "head.tflite": (data[:64], "truncated"),
        "random.tflite": (os.urandom(4096), "not a TFLite model"),
        "text.tflite": (b"hello world, not a model\n", "not a TFLite model"),
    }
    for name, (content, _needle) in cases.items():
        path = tmp_path / name
        path.write_bytes(content)
        out = tmp_path / f"{name}.bundle"
        _assert_clean_failure(run_cli("compile", path, "-o", out), out, name)
    out = tmp_path / "missing.bundle"
    _assert_clean_failure(run_cli("compile", tmp_path / "nope.tflite", "-o", out), out, "no such file")


def test_bad_target_and_bad_output(models_dir, tmp_path):
    model = models_dir / "sine_float.tflite"
    out = tmp_path / "b"
    _assert_clean_failure(run_cli("compile", model, "-o", out, "--target", "vulkan"), out, "vulkan")
    afile = tmp_path / "afile"
    afile.write_text("x")
    proc = run_cli("compile", model, "-o", afile)
    assert proc.returncode != 0 and "not a directory" in proc.stderr and afile.read_text() == "x"
    precious = tmp_path / "precious"
    precious.mkdir()
    (precious / "notes.txt").write_text("mine")
    proc = run_cli("compile", model, "-o", precious)
    assert proc.returncode != 0 and "not a bundle" in proc.stderr
    assert (precious / "notes.txt").read_text() == "mine"


def test_recompiling_replaces_a_bundle_and_a_failure_keeps_it(models_dir, tmp_path):
    out = tmp_path / "b"
    run_cli("compile", models_dir / "sine_float.tflite", "-o", out, check=True)
    first = (out / "manifest.json").read_text()
    assert '"sine_float.tflite"' in first
    proc = run_cli("compile", models_dir / "selfie_segmentation.tflite", "-o", out)
    assert proc.returncode != 0
    assert (out / "manifest.json").read_text() == first
    run_cli("compile", models_dir / "logmelcalc.tflite", "-o", out, check=True)
    assert '"logmelcalc.tflite"' in (out / "manifest.json").read_text()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["b"]


def test_origins_cli_errors(gt_model, bundles, tmp_path):
    out = bundles.get(gt_model, "c")
    for position in ("nope.c:1", "code/module.c:999999", "code/module.c:x"):
        proc = run_cli("origins", out, position)
        assert proc.returncode != 0 and "Traceback" not in proc.stderr
    proc = run_cli("origins", tmp_path, "code/module.c:1")
    assert proc.returncode != 0 and "manifest" in proc.stderr


def test_truncations_at_many_offsets_and_foreign_flatbuffers(models_dir, tmp_path):
    """Through the real CLI: every cut of a real model, and a valid flatbuffer of another
    schema, end with one message naming the file and leave nothing behind."""
    import flatbuffers

    data = (models_dir / "small_cnn_fp32.tflite").read_bytes()
    cuts = sorted({4, 8, 9, 16, 32, 100, 500, 1000} | {len(data) * k // 25 for k in range(1, 25)})
    for cut in cuts:
        path = tmp_path / f"cut{cut}.tflite"
        path.write_bytes(data[:cut])
        out = tmp_path / f"cut{cut}.bundle"
        _assert_clean_failure(run_cli("compile", path, "-o", out), out, path.name)
    b = flatbuffers.Builder(64)
    name = b.CreateString("not a model")
    b.StartObject(1)
    b.PrependUOffsetTRelativeSlot(0, name, 0)
    b.Finish(b.EndObject(), file_identifier=b"TFL3")  # right identifier, foreign table
    path = tmp_path / "foreign.tflite"
    path.write_bytes(bytes(b.Output()))
    out = tmp_path / "foreign.bundle"
    _assert_clean_failure(run_cli("compile", path, "-o", out), out, "foreign.tflite")


def test_unsupported_target_names(models_dir, tmp_path):
    model = models_dir / "sine_float.tflite"
    for target in ("", "C", "llvm -mcpu=x", "cuda; rm -rf /", "../c"):
        out = tmp_path / "b"
        _assert_clean_failure(run_cli("compile", model, "-o", out, "--target", target), out, "unsupported target")


def test_output_folder_that_cannot_be_written(models_dir, tmp_path):
    model = models_dir / "sine_float.tflite"
    # /proc refuses new directories even to root; a read-only directory refuses others.
    proc = run_cli("compile", model, "-o", "/proc/tvmx-bundle")
    assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr
    assert "/proc/tvmx-bundle: cannot write the bundle" in proc.stderr
    inside_file = tmp_path / "afile"
    inside_file.write_text("x")
    proc = run_cli("compile", model, "-o", inside_file / "b")
    assert proc.returncode == 2 and f"parent directory {inside_file} is not a directory" in proc.stderr
    if os.geteuid() != 0:
        ro = tmp_path / "ro"
        ro.mkdir()
        ro.chmod(0o555)
        proc = run_cli("compile", model, "-o", ro / "b")
        assert proc.returncode == 2 and "not writable" in proc.stderr

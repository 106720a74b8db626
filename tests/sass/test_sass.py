"""``compile --target cuda --sass``: the CUDA of a real compile (small_cnn) built to sm_90 machine
code with NVIDIA's own tools (the [sass] extra's wheels, no GPU), every instruction joined to its
CUDA line and layer; the kernels' facts read from the tools' own reports (checked against
cuobjdump's independent resource listing); a profiler's kernel name resolved to its layers."""

from __future__ import annotations

import json
import re
import subprocess

import pytest
from tests.conftest import MODELS, run_cli

from tvm_explorer.bundle.reader import Bundle
from tvm_explorer.sass.tools import find_tools

SASS = "code/device.sm_90.sass"
_LINE = re.compile(r"// device\.cu:(\d+)")


@pytest.fixture(scope="module")
def bundle(bundles) -> Bundle:
    return Bundle(bundles.get(MODELS / "small_cnn_fp32.tflite", "cuda", "--sass"))


def _kernel_lines(text: str, kernel: str) -> list[tuple[int, str]]:
    """(0-based line, text) of the instructions of ``kernel`` in the SASS document."""
    lines = text.split("\n")
    first = lines.index(f"{kernel}:")
    out = []
    for i in range(first + 1, len(lines)):
        if lines[i].startswith("//") or (lines[i].endswith(":") and not lines[i].startswith(".L_")) or not lines[i]:
            break
        if lines[i].startswith("  /*"):
            out.append((i, lines[i]))
    return out


def test_the_sass_document_is_a_stage_after_its_cuda(bundle):
    doc = bundle.document(SASS)
    assert doc is not None and doc.stage == "code" and doc.source == "code/device.cu"
    assert bundle.previous_document(SASS).path == "code/device.cu"
    names = [p["name"] for p in bundle.manifest["passes"]]
    assert names.index("sass (sm_90)") == names.index("codegen (cuda)") + 1
    assert bundle.manifest["options"]["sass"] == "sm_90"


def test_every_instruction_names_a_real_cuda_line(bundle):
    sass, cuda = bundle.text(SASS).split("\n"), bundle.text("code/device.cu").split("\n")
    instructions = [line for line in sass if line.startswith("  /*")]
    assert len(instructions) > 1000
    named = [int(m.group(1)) for line in instructions if (m := _LINE.search(line))]
    assert len(named) >= 0.95 * len(instructions)
    assert all(1 <= n <= len(cuda) and cuda[n - 1].strip() for n in named)


def test_the_conv_inner_loop_instructions_belong_to_the_conv(bundle):
    """The fused conv kernel's FMAs (its multiply-accumulate loop) are the CONV_2D layer's, and
    so is the CUDA line each names."""
    text = bundle.text(SASS)
    fmas = [(i, line) for i, line in _kernel_lines(text, "fused_conv2d_add_relu_kernel") if " FFMA " in line]
    assert len(fmas) >= 16
    for i, line in fmas:
        offset = bundle.offset_of(SASS, i, line.index("FFMA"))
        layers = {(o.layer.opcode, o.layer.op_index) for o in bundle.origins_at(SASS, offset)}
        assert ("CONV_2D", 0) in layers, (line, layers)
        cuda_line = int(_LINE.search(line).group(1))
        cu_offset = bundle.offset_of("code/device.cu", cuda_line - 1, 4)
        assert ("CONV_2D", 0) in {
            (o.layer.opcode, o.layer.op_index) for o in bundle.origins_at("code/device.cu", cu_offset)
        }


@pytest.mark.parametrize(
    "kernel, opcodes",
    [
        ("softmax_kernel", {"SOFTMAX"}),
        ("fused_matmul_relu2_kernel", {"FULLY_CONNECTED"}),
        ("max_pool2d_kernel", {"MAX_POOL_2D"}),
    ],
)
def test_each_kernel_is_its_layer(bundle, kernel, opcodes):
    text = bundle.text(SASS)
    body = _kernel_lines(text, kernel)
    assert body
    ops = {o.layer.opcode for i, line in body for o in bundle.origins_at(SASS, bundle.offset_of(SASS, i, 4))}
    assert ops == opcodes


def test_kernel_facts_agree_with_cuobjdump(bundle, tmp_path):
    section = json.loads((bundle.root / "sass.json").read_text())
    assert section["arch"] == "sm_90" and section["document"] == SASS
    kernels = {k["name"]: k for k in section["kernels"]}
    assert "fused_conv2d_add_relu_kernel" in kernels and "softmax_kernel" in kernels
    # cuobjdump reads the registers back from the cubin: an independent check of ptxas's report.
    tools = find_tools()
    cubin = tmp_path / "device.cubin"
    subprocess.run(
        [str(tools.nvcc), "-cubin", "-arch=sm_90", "-w", "-o", str(cubin), str(bundle.root / "code/device.cu")],
        capture_output=True,
        timeout=600,
        check=True,
    )
    listing = subprocess.run(
        [str(tools.cuobjdump), "-res-usage", str(cubin)], capture_output=True, text=True, timeout=120, check=True
    ).stdout
    registers = dict(re.findall(r"Function (\w+):\s*\n\s*REG:(\d+)", listing))
    assert registers, listing[:500]
    for name, regs in registers.items():
        assert kernels[name]["registers"] == int(regs), name
    conv = kernels["fused_conv2d_add_relu_kernel"]
    assert conv["threads_per_block"] == 128 and conv["shared"] > 0 and conv["instructions"] > 100
    assert 0 < conv["occupancy"] <= 1 and conv["occupancy_limit"]
    assert conv["layers"][0] == 0  # the conv's own layer computes most of its instructions
    per_layer = section["layers"]["0"]
    assert per_layer["kernels"] == ["fused_conv2d_add_relu_kernel"] and per_layer["instructions"] > 100


def test_a_profiler_kernel_name_resolves_to_its_layers(bundle):
    got = run_cli(
        "origins",
        bundle.root,
        "--kernel",
        "fused_conv2d1_add1_relu1_kernel(float*, float*, float*, float*)",
        "--json",
        check=True,
    )
    found = json.loads(got.stdout)["found"]
    assert [f["document"] for f in found] == ["code/device.cu", SASS, "code/host.ll"]
    assert {o["op_index"] for f in found for o in f["origins"]} == {2}
    missing = run_cli("origins", bundle.root, "--kernel", "no_such_kernel")
    assert missing.returncode == 2 and "softmax_kernel" in missing.stderr and "Traceback" not in missing.stderr


def test_sass_needs_a_cuda_target(tmp_path):
    got = run_cli("compile", MODELS / "small_cnn_fp32.tflite", "-o", tmp_path / "x.bundle", "--sass")
    assert got.returncode == 2 and "--sass needs --target cuda" in got.stderr
    assert not (tmp_path / "x.bundle").exists()
    bad = run_cli(
        "compile", MODELS / "small_cnn_fp32.tflite", "-o", tmp_path / "x.bundle", "--target", "cuda", "--sass", "sm_5"
    )
    assert bad.returncode == 2 and "expected a GPU architecture" in bad.stderr


def test_the_costs_table_shows_the_machine_columns(bundle):
    got = run_cli("costs", bundle.root, check=True).stdout
    assert "Machine code for sm_90 (--sass)" in got
    conv = next(line for line in got.splitlines() if "op 0 CONV_2D" in line)
    facts = {k["name"]: k for k in json.loads((bundle.root / "sass.json").read_text())["kernels"]}
    assert f" {facts['fused_conv2d_add_relu_kernel']['registers']} " in conv
    table = json.loads(run_cli("costs", bundle.root, "--json", check=True).stdout)
    assert table["machine"]["arch"] == "sm_90" and table["machine"]["layers"]["0"]["instructions"] > 100


@pytest.mark.parametrize(
    "damage",
    [
        lambda d: d.update(schema_version=2),
        lambda d: d["kernels"][0].update(registers=-1),
        lambda d: d["kernels"][0].update(occupancy=float("nan")),
        lambda d: d["layers"].update({"999": {"instructions": 1}}),
        lambda d: d.update(kernels="x"),
    ],
)
def test_a_damaged_sass_section_is_left_out_with_its_reason(bundle, tmp_path, damage):
    import shutil

    copy = tmp_path / "b.bundle"
    shutil.copytree(bundle.root, copy)
    data = json.loads((copy / "sass.json").read_text())
    damage(data)
    (copy / "sass.json").write_text(json.dumps(data))
    damaged = Bundle(copy)
    assert damaged.sass() is None and "sass.json" in str(damaged.section_problems["sass.json"])
    got = run_cli("costs", copy)
    assert got.returncode == 0 and "Machine code for" not in got.stdout


def test_compare_names_a_layer_whose_registers_or_spills_grew(bundle, tmp_path):
    """B is A with the conv's kernel planted to need 40 more registers and to spill: compare says
    so for that layer only (the same model and target: everything else is equal)."""
    import shutil

    b = tmp_path / "b.bundle"
    shutil.copytree(bundle.root, b)
    data = json.loads((b / "sass.json").read_text())
    data["layers"]["0"]["registers"] += 40
    data["layers"]["0"]["spilled"] = 128
    (b / "sass.json").write_text(json.dumps(data))
    got = json.loads(run_cli("compare", bundle.root, b, "--json", check=True).stdout)
    grew = {r["op_index"]: r["machine"]["grew"] for r in got["layers"] if r.get("machine")}
    assert grew[0] == [
        f"registers {data['layers']['0']['registers'] - 40} -> {data['layers']['0']['registers']}",
        "spilled bytes 0 -> 128",
    ]
    assert all(not g for op, g in grew.items() if op != 0)
    text = run_cli("compare", bundle.root, b, check=True).stdout
    assert "1 layers whose machine code needs more registers or spills more" in text

"""PyTorch ExportedPrograms (.pt2) through TVM's own importer with spans, down to source lines."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

torch = pytest.importorskip("torch", reason="PyTorch is not installed (pip install -e '.[torch]')")

from conftest import run_cli  # noqa: E402
from frontends import torch_nets  # noqa: E402
from frontends.bundle_checks import assert_full_coverage as _assert_full_coverage  # noqa: E402
from frontends.bundle_checks import lines_matching as _lines  # noqa: E402
from frontends.bundle_checks import origins as _origins  # noqa: E402
from third_party import mtcnn_nets  # noqa: E402
from tvm_explorer.bundle.reader import Bundle  # noqa: E402

NETS = Path(torch_nets.__file__).resolve()


@pytest.fixture(scope="session")
def programs(tmp_path_factory) -> dict[str, Path]:
    """The residual net and MTCNN's PNet/RNet, exported and saved as .pt2 files."""
    root = tmp_path_factory.mktemp("pt2")
    out = {}
    ep, _ = torch_nets.resnet_program()
    torch.export.save(ep, root / "resnet.pt2")
    out["resnet"] = root / "resnet.pt2"
    torch.manual_seed(0)
    for name, net, size in (("pnet", mtcnn_nets.PNet(), 12), ("rnet", mtcnn_nets.RNet(), 24)):
        ep = torch.export.export(net.eval(), (torch.randn(1, 3, size, size),))
        torch.export.save(ep, root / f"{name}.pt2")
        out[name] = root / f"{name}.pt2"
    return out


@pytest.mark.parametrize("target", ["c", "cuda"])
def test_resnet_origins_reach_forward_lines(programs, bundles, target):
    out = bundles.get(programs["resnet"], target)
    _assert_full_coverage(out)
    b = Bundle(out)
    assert b.manifest["model"]["kind"] == "torch"
    by_name = {lay.name: lay for lay in b.layers}
    assert by_name["block1.conv1/convolution_1"].source == (str(NETS), torch_nets.LINES["block.conv1"])
    assert by_name["block2.act/relu_1"].module_class == "ReLU"
    assert by_name["stem/convolution"].source[1] == torch_nets.LINES["stem"]
    relax_doc = next(d.path for d in b.documents if d.stage == "relax")
    # Every import binding of a convolution comes from its convolution node (the bias add
    # after it is the node's output), with the user's forward() line.
    conv_lines = _lines(out, relax_doc, r"R\.nn\.conv2d\(")
    assert len(conv_lines) == 5
    seen = []
    for line in conv_lines:
        found = _origins(out, f"{relax_doc}:{line}")
        assert len(found) == 1 and found[0]["opcode"] == "aten.convolution.default"
        seen.append((found[0]["name"], found[0]["source"]["line"]))
        assert found[0]["source"]["file"] == str(NETS)
    assert seen == [
        ("stem/convolution", 38),
        ("block1.conv1/convolution_1", 21),
        ("block1.conv2/convolution_2", 23),
        ("block2.conv1/convolution_3", 21),
        ("block2.conv2/convolution_4", 23),
    ]
    (sig,) = _lines(out, relax_doc, r"R\.sigmoid\(")
    assert [(o["name"], o["source"]["line"]) for o in _origins(out, f"{relax_doc}:{sig}")] == [("sigmoid", 42)]
    if target == "c":
        code = "code/module.c"
        relu = _lines(out, code, r"\) > \(0\.0+e\+00f\)")
        assert relu and all(22 in {o["source"]["line"] for o in _origins(out, f"{code}:{n}")} for n in relu)


def test_model_document_per_graph_node(programs, bundles):
    text = (bundles.get(programs["resnet"], "c") / "model.fxgraph").read_text()
    assert text.startswith("# PyTorch ExportedProgram resnet.pt2\n")
    assert "\nmodule block1.conv1 (Conv2d)\n" in text and "\nmodule head (Linear)\n" in text
    assert re.search(
        r"node 1 aten\.convolution\.default block1\.conv1/convolution_1  stride=\[1,1\] padding=\[1,1\]", text
    )
    assert re.search(r"out  convolution_1\s+float32\[1,8,8,8\]", text)
    assert f"source frontends/torch_nets.py:21  ({NETS})" in text


@pytest.mark.parametrize("name,target", [("pnet", "c"), ("pnet", "cuda"), ("rnet", "c")])
def test_mtcnn_bundles(programs, bundles, name, target):
    out = bundles.get(programs[name], target)
    _assert_full_coverage(out)
    b = Bundle(out)
    classes = {lay.module_class for lay in b.layers}
    assert {"Conv2d", "PReLU"} <= classes
    assert all(lay.source and lay.source[0].endswith("mtcnn_nets.py") for lay in b.layers)
    code = [p for p in b.manifest["passes"] if p["name"] in ("codegen (c)", "codegen (cuda)")]
    assert code and all(p["attributed"] >= 0.99 * p["units"] > 0 for p in code)


def test_import_and_build_identical_to_stock(programs, tmp_path):
    import tvm_ffi
    from tvm.relax.frontend.torch import from_exported_program

    from tvm_explorer.app.compile import compile_model
    from tvm_explorer.capture.pipeline import generated_sources
    from tvm_explorer.frontends import import_any, load_any
    from tvm_explorer.provenance import OriginTable

    for name in ("resnet", "pnet"):
        model = load_any(programs[name])
        stock = from_exported_program(torch.export.load(programs[name]))
        assert tvm_ffi.structural_equal(stock, import_any(model, OriginTable())), name
        ours = compile_model(model, tmp_path / f"{name}.bundle", "c").executable
        plain = compile_model(programs[name], None, "c", fill_spans=False).executable
        assert generated_sources(plain, "c") == generated_sources(ours, "c"), name


def test_capture_from_torch_module(tmp_path):
    import tvm

    from tvm_explorer.app.compile import Capture

    torch.manual_seed(0)
    with Capture.from_torch(torch_nets.Block(4).eval(), (torch.randn(1, 4, 6, 6),), tmp_path / "block.bundle") as cap:
        cap.add_executable(tvm.compile(cap.module, tvm.target.Target("c"), relax_pipeline=cap.pipeline("c")))
    b = Bundle(cap.bundle)
    assert [lay.source[1] for lay in b.layers] == [21, 22, 23, 24]
    assert all(p["attributed"] == p["units"] for p in b.manifest["passes"] if p["stage"] == "relax")


def _one_message(proc, *expected):
    assert proc.returncode != 0 and "Traceback" not in proc.stderr
    lines = [line for line in proc.stderr.splitlines() if line.startswith("tvm-explorer: error:")]
    assert len(lines) == 1, proc.stderr
    for text in expected:
        assert text in lines[0], lines[0]


def test_bad_pt2_files(programs, tmp_path):
    garbage = tmp_path / "garbage.pt2"
    garbage.write_text("not a zip archive\n")
    truncated = tmp_path / "truncated.pt2"
    truncated.write_bytes(programs["pnet"].read_bytes()[:3000])
    for path in (garbage, truncated):
        out = tmp_path / f"{path.stem}.bundle"
        _one_message(run_cli("compile", path, "-o", out), path.name, "not a loadable torch.export program")
        assert not out.exists()


def test_without_torch_a_clear_message(programs, tmp_path):
    code = (
        "import sys; sys.modules['torch'] = None; from tvm_explorer.cli import main; "
        f"sys.exit(main(['compile', {str(programs['pnet'])!r}, '-o', {str(tmp_path / 'x.bundle')!r}, '--in-process']))"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    _one_message(proc, "pnet.pt2", "needs PyTorch", "pip install -e '.[torch]'", "torch==2.13.0")


def test_plain_origins_say_what_json_says(programs, bundles):
    """``origins`` without ``--json``: the module path, its class and the source line."""
    out = bundles.get(programs["resnet"], "c")
    relax_doc = next(d.path for d in Bundle(out).documents if d.stage == "relax")
    line = _lines(out, relax_doc, r"R\.nn\.conv2d\(")[0]
    (found,) = _origins(out, f"{relax_doc}:{line}")
    text = run_cli("origins", out, f"{relax_doc}:{line}", check=True).stdout.strip()
    module = found["name"].split("/")[0]
    assert found["module_class"] == "Conv2d"
    assert (
        f"op {found['op_index']} aten.convolution.default {module} (Conv2d) — "
        f"{found['source']['file']}:{found['source']['line']} ("
    ) in text, text


def test_resnet_history_follows_a_conv_into_its_shared_kernel(programs, bundles):
    """Layer history (issue 41) of a PyTorch node: block1's first conv, fused with its ReLU into
    a function that block2's identical conv + ReLU share."""
    from tvm_explorer.history.steps import layer_history
    from tvm_explorer.navigation.view import BundleView

    bundle = Bundle(bundles.get(programs["resnet"], "c"))
    by_name = {lay.name: lay for lay in bundle.layers}
    conv = by_name["block1.conv1/convolution_1"]
    others = sorted(by_name[n].op_index for n in ("block1.act/relu", "block2.conv1/convolution_3", "block2.act/relu_1"))
    steps = {s.pass_name: s for s in layer_history(BundleView(bundle), [conv.id]).steps}
    assert steps["import"].summary == "3 bindings: R.nn.conv2d, R.reshape, R.add"
    assert steps["FuseOps"].summary == (
        f"fused with op {others[0]} (aten.relu.default), op {others[1]} (aten.convolution.default) and "
        f"op {others[2]} (aten.relu.default) into fused_conv2d1_add_relu"
    )
    assert steps["FuseTIR"].summary == "3 PrimFuncs → 1 (fused_conv2d1_add_relu)"
    assert steps["codegen (c)"].summary.startswith("C: 1 function fused_conv2d1_add_relu (")

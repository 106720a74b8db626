"""Tiny Llama and GPT-2 (Hugging Face, random weights, real torch.export) on the CPU targets:
TVM's C compiled with the spellings C lacks defined and recorded; llvm built through our
workaround pass; what stock TVM cannot build said in one message naming kernel, node and
source line; a dynamic sequence length named with its node and dimension."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

torch = pytest.importorskip("torch", reason="PyTorch is not installed (pip install -e '.[torch]')")
pytest.importorskip("transformers", reason="transformers is not installed (test extra)")

from tests import llm_models  # noqa: E402

from conftest import run_cli  # noqa: E402
from frontends.bundle_checks import assert_full_coverage  # noqa: E402
from tvm_explorer.bundle.reader import Bundle  # noqa: E402

INFF = "#define inff (__builtin_inff())"


@pytest.fixture(scope="session")
def llms(llm_bundles, tmp_path_factory) -> dict[str, Path]:
    """The tiny Llama of tests/llm_models.py (the session's export, shared with the source-line
    tests) and the Llama exported with a dynamic sequence length."""
    root = tmp_path_factory.mktemp("llm_targets")
    return {
        "llama": llm_bundles.program("llama"),
        "llama_dyn": llm_models.export("llama", root / "llama_dyn.pt2", dynamic_seq=True),
    }


def _json(bundle: Path, name: str) -> dict:
    return json.loads((bundle / name).read_text())


def _assert_measured_per_layer(bundle: Path, fixes: list[str]) -> dict:
    costs = _json(bundle, "costs.json")
    profile = costs["profile"]
    assert profile["status"] == "measured", profile
    assert profile.get("c_fixes", []) == fixes
    assert 0 < costs["total_ms"] < 1000
    timed = {lay["name"] for lay in costs["layers"] if (lay.get("time_ms") or 0) > 0}
    for block in (".layers.0.", ".layers.1.", ".h.0.", ".h.1."):
        if any(block in lay["name"] for lay in costs["layers"]):
            assert any(block in name for name in timed), f"no time measured for a layer of {block}"
    return costs


def _assert_matches_reference(bundle: Path, fixes: list[str]) -> dict:
    numerics = _json(bundle, "numerics.json")
    assert numerics.get("c_fixes", []) == fixes
    assert numerics["reference"].startswith("eager PyTorch")
    assert numerics["first_divergence"] is None, numerics["first_divergence"]
    observed = [e for e in numerics["layers"] if e["observed"]]
    assert len(observed) >= 20
    # the logits (the last observed node) agree with eager PyTorch to float32 rounding
    last = max(observed, key=lambda e: e["op_index"])
    assert last["cosine"] > 0.99999 and 0 < last["max_rel"] < 1e-4, last
    return numerics


def _assert_mask_line(message: str) -> None:
    import re

    import transformers.models.llama.modeling_llama as modeling

    found = re.search(r"/cumsum at modeling_llama\.py:(\d+)", message)
    assert found, message
    line = Path(modeling.__file__).read_text().splitlines()[int(found[1]) - 1]
    assert "create_causal_mask(" in line, line


def test_llama_c_profile_and_numerics_measure(llm_bundles):
    out = llm_bundles.get("llama")  # target c, --profile --numerics
    _assert_measured_per_layer(out, [INFF])
    numerics = _assert_matches_reference(out, [INFF])
    # the causal mask's -inf: equal in both, so the masked add agrees (not "non-finite")
    masked = [e for e in numerics["layers"] if e["observed"] and "non-finite" in (e["note"] or "")]
    assert masked and all(not e["diverges"] and e["max_rel"] < 1e-4 for e in masked)
    # the generated C in the bundle is TVM's own: the fix is applied only when compiling it
    assert "-inff" in (out / "code/module.c").read_text()
    assert "__builtin_inff" not in (out / "code/module.c").read_text()


def test_gpt2_c_profile_and_numerics_measure(llm_bundles):
    out = llm_bundles.get("gpt2")  # target c, --profile --numerics
    _assert_measured_per_layer(out, _json(out, "costs.json")["profile"].get("c_fixes", []))
    _assert_matches_reference(out, _json(out, "numerics.json").get("c_fixes", []))


def test_llama_builds_and_runs_on_llvm_through_the_workaround(llms, bundles):
    out = bundles.get(llms["llama"], "llvm", "--numerics")
    passes = [p["name"] for p in Bundle(out).manifest["passes"]]
    assert "BoolCumsumAsInteger" in passes
    assert_full_coverage(out)
    _assert_matches_reference(out, [])  # built, run, and equal to eager PyTorch


def test_stock_llvm_failure_names_kernel_node_and_line(llms, tmp_path):
    (tmp_path / "stock_pipeline.py").write_text(
        "from tvm import relax\n\n\ndef stock(target):\n"
        "    return relax.backend.cpu_generic.get_default_pipeline(target)\n"
    )
    import os

    proc = run_cli(
        "compile",
        llms["llama"],
        "-o",
        tmp_path / "x.bundle",
        "--target",
        "llvm",
        "--pipeline",
        "stock_pipeline:stock",
        timeout=600,
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), os.environ.get("PYTHONPATH", "")])},
    )
    assert proc.returncode != 0
    errors = [ln for ln in proc.stderr.splitlines() if ln.startswith("tvm-explorer: error:")]
    assert len(errors) == 1 and "Traceback" not in proc.stderr, proc.stderr
    message = errors[0]
    assert "kernel cumsum (node " in message and "aten.cumsum.default" in message, message
    _assert_mask_line(message)  # the node's source line: where the model builds its causal mask
    assert "adds booleans, which TVM's LLVM code generator cannot" in message, message
    assert not (tmp_path / "x.bundle").exists()


def test_dynamic_sequence_length_is_named_with_node_and_dimension(llms, tmp_path):
    proc = run_cli("compile", llms["llama_dyn"], "-o", tmp_path / "d.bundle", "--target", "c")
    assert proc.returncode != 0
    errors = [ln for ln in proc.stderr.splitlines() if ln.startswith("tvm-explorer: error:")]
    assert len(errors) == 1 and "Traceback" not in proc.stderr, proc.stderr
    message = errors[0]
    assert "in pass DispatchSortScan, node " in message and "aten.cumsum.default" in message, message
    assert "dim 1 of model input 'ids'" in message, message
    _assert_mask_line(message)
    assert "export the model with static shapes" in message and "tvm-explorer reduce" in message, message
    assert "pin the model's open input sizes with --input-shape" in message, message
    assert "non-symbolic shape is not supported" in message


def test_a_dynamic_sequence_length_pinned_with_input_shape_compiles(llms, tmp_path):
    """The same program with --input-shape ids=1,6: exported again at that length, it compiles;
    the model document says what was open; the module paths and source lines are the model's."""
    from tvm_explorer.errors import ExplorerError
    from tvm_explorer.frontends import load_any, pin_inputs
    from tvm_explorer.frontends.input_shapes import parse_input_shape

    with pytest.raises(ExplorerError, match=r"exported for with s\d+ in \[2, 32\]; 64 is outside"):
        pin_inputs(load_any(llms["llama_dyn"]), [parse_input_shape("ids=1,64")])
    out = tmp_path / "pinned.bundle"
    proc = run_cli("compile", llms["llama_dyn"], "-o", out, "--target", "c", "--input-shape", "ids=1,6")
    assert proc.returncode == 0, proc.stderr
    doc = (out / "model.fxgraph").read_text()
    assert "input  ids     int64[1,6]  (pinned by --input-shape; the model declares [1,s" in doc, doc[:600]
    assert "module m.model.layers.0.self_attn" in doc and "source llama/modeling_llama.py:" in doc

"""Hugging Face language models (tiny Llama, GPT-2, BERT; random weights; nothing downloaded)
through the PyTorch path: each origin's source is the innermost line of model code, its stack
runs from the user's wrapper inward, repeated decoder layers are named once, and costs roll up
the module tree (issue 32)."""

from __future__ import annotations

import json
import re

import pytest
from tests import llm_models
from tests.conftest import run_cli

from tvm_explorer.bundle.reader import Bundle
from tvm_explorer.costs.rollup import across_repeats, by_module
from tvm_explorer.frontends.graph import is_model_code, source_and_stack
from tvm_explorer.provenance.repeats import compress, group_repeated, indices_text

pytest.importorskip("torch", reason="PyTorch is not installed (pip install -e '.[torch]')")


def _line_of(bundle, pattern: str) -> int:
    """The 1-based line of generated C matching ``pattern`` inside a kernel body."""
    lines = Bundle(bundle).text("code/module.c").split("\n")
    return next(i + 1 for i, line in enumerate(lines) if re.search(pattern, line))


def _origins(bundle, position: str) -> list[dict]:
    return json.loads(run_cli("origins", bundle, position, "--json", check=True).stdout)["origins"]


def _file_line(file: str, line: int) -> str:
    return open(file).read().split("\n")[line - 1]


def test_llama_source_is_the_innermost_model_line_with_its_stack(llm_bundles):
    bundle = llm_bundles.get("llama")
    q_proj = next(lay for lay in Bundle(bundle).layers if lay.name.endswith("self_attn.q_proj/mm"))
    # The shared kernel computing q_proj: a C store line of it
    line = _line_of(bundle, r"^\s+matmul\[")
    found = _origins(bundle, f"code/module.c:{line}")
    mine = next(o for o in found if o["op_index"] == q_proj.op_index)
    file, number = mine["source"]["file"], mine["source"]["line"]
    assert file.endswith("transformers/models/llama/modeling_llama.py")
    assert "self.q_proj(" in _file_line(file, number)
    stack = mine["stack"]
    # entry first: the user's wrapper; then the model library inward; torch's Linear last
    assert stack[0]["file"] == llm_models.__file__ and stack[0]["line"] == llm_models.WRAPPER_LINE
    assert stack[0]["function"] == "forward"
    at = [i for i, f in enumerate(stack) if (f["file"], f["line"]) == (file, number)]
    assert at and all(f["file"].endswith("modeling_llama.py") for f in stack[1 : at[0] + 1])
    assert stack[-1]["file"].endswith("torch/nn/modules/linear.py")


@pytest.mark.parametrize(
    ("name", "module", "code"),
    [
        ("gpt2", "attn.c_attn/addmm", "self.c_attn("),
        ("bert", "attention.self.query/addmm", "self.query("),
    ],
)
def test_gpt2_and_bert_sources_are_model_lines(tmp_path, name, module, code):
    """Read by the PyTorch frontend as a compile reads them (not compiled: the layer table
    and everything after it are the Llama's tests)."""
    from tvm_explorer.frontends import load_any

    layers = load_any(llm_models.export(name, tmp_path / f"{name}.pt2")).layers
    lay = next(lay for lay in layers if lay.name.endswith(module))
    assert lay.source is not None and f"models/{name}/modeling_{name}.py" in lay.source[0]
    assert code in _file_line(*lay.source)
    assert lay.stack[0][:2] == (llm_models.__file__, llm_models.WRAPPER_LINE)
    # nearly every node reaches model code (the rest: the exporter's own nodes)
    assert sum(lay.source is not None for lay in layers) > 0.8 * len(layers)


def test_plain_origins_compress_repeated_layers(llm_bundles):
    bundle = llm_bundles.get("llama")
    line = _line_of(bundle, r"^\s+matmul\[")
    text = run_cli("origins", bundle, f"code/module.c:{line}", check=True).stdout
    q = next(row for row in text.splitlines() if ".q_proj" in row)
    assert "m.model.layers.{0..1}.self_attn.q_proj (Linear) — " in q
    assert re.search(r"modeling_llama\.py:\d+ \(layer output\)", q), q
    assert q.startswith("ops ") and "layers.0." not in text


def test_model_code_rule():
    site = "/v/lib/python3.11/site-packages/"
    assert is_model_code("/home/me/wrap.py")
    assert is_model_code(site + "transformers/models/llama/modeling_llama.py")
    for framework in (
        "torch/nn/modules/linear.py",
        "transformers/activations.py",
        "transformers/integrations/sdpa_attention.py",
        "transformers/pytorch_utils.py",
    ):
        assert not is_model_code(site + framework), framework
    assert not is_model_code("/usr/lib/python3.11/contextlib.py")
    assert not is_model_code("<eval_with_key>.3")
    trace = (
        f'File "/home/me/wrap.py", line 9, in forward\n    x\n'
        f'  File "{site}transformers/models/llama/modeling_llama.py", line 244, in forward\n    y\n'
        f'  File "{site}torch/nn/modules/linear.py", line 134, in forward\n    z\n'
    )
    source, stack = source_and_stack(trace)
    assert source == (site + "transformers/models/llama/modeling_llama.py", 244)
    assert [f[1:] for f in stack] == [(9, "forward"), (244, "forward"), (134, "forward")]


def test_compressed_paths():
    paths = [f"model.layers.{i}.mlp.down_proj" for i in (0, 1, 2, 3, 5)] + ["model.norm"]
    assert compress(paths) == ["model.layers.{0..3,5}.mlp.down_proj", "model.norm"]
    assert indices_text([7]) == "{7}" and indices_text([0, 1, 3, 4, 9]) == "{0..1,3..4,9}"
    # a group stands for exactly its paths: no cartesian product that was not there
    assert compress(["a.0.b.0", "a.0.b.1", "a.1.b.0"]) == ["a.{0..1}.b.0", "a.0.b.1"]
    assert group_repeated(["x.1.y", "z", "x.0.y", "x.1.y"]) == [("x.{0..1}.y", [0, 2, 3]), ("z", [1])]
    assert compress(["layers.01.a", "layers.1.a"]) == ["layers.01.a", "layers.1.a"]  # not an index


def test_costs_by_module_rolls_up_to_the_leaf_sums(llm_bundles):
    bundle = llm_bundles.get("llama")
    leaves = Bundle(bundle).costs()["layers"]
    total_lines = sum(lay["code_lines"] for lay in leaves)
    total_bytes = sum(lay["workspace_bytes"] for lay in leaves)
    per_layer = json.loads(run_cli("costs", bundle, "--by", "module:4", "--json", check=True).stdout)
    rows = {r["module"]: r for r in per_layer["modules"]}
    assert {"m.model.layers.0", "m.model.layers.1"} <= set(rows)
    assert sum(r["code_lines"] for r in per_layer["modules"]) == total_lines
    assert sum(r["workspace_bytes"] for r in per_layer["modules"]) == total_bytes
    assert sorted(i for r in per_layer["modules"] for i in r["layers"]) == [lay["id"] for lay in leaves]
    decoder = rows["m.model.layers.1"]
    assert decoder["layers"] == [
        lay["id"] for lay in leaves if (lay["name"].split("/")[0] + ".").startswith("m.model.layers.1.")
    ]
    (both,) = [r for r in per_layer["repeated"] if r["module"] == "m.model.layers.{0..1}"]
    assert both["members"] == ["m.model.layers.0", "m.model.layers.1"]
    assert both["code_lines"] == rows["m.model.layers.0"]["code_lines"] + rows["m.model.layers.1"]["code_lines"]
    # per block kind across layers: attention, MLP, norms
    kinds = {r["module"] for r in across_repeats(by_module(leaves, 5))}
    assert {
        "m.model.layers.{0..1}.self_attn",
        "m.model.layers.{0..1}.mlp",
        "m.model.layers.{0..1}.input_layernorm",
    } <= kinds
    text = run_cli("costs", bundle, "--by", "module", check=True).stdout
    assert "m.model.layers.{0..1}.self_attn.q_proj" in text and "Across repeated layers" in text
    plain = run_cli("costs", bundle, check=True).stdout
    assert re.search(
        r"\n\d+ modules repeat across layers \(e\.g\. m\.model\.layers\.\{0\.\.1\}\.[\w.]+\): "
        r"tvm-explorer costs .* --by module sums them\n$",
        plain,
    ), plain[-300:]
    bad = run_cli("costs", bundle, "--by", "module:x")
    assert bad.returncode == 2 and bad.stderr.strip() == (
        "tvm-explorer: error: --by module:x: DEPTH must be a whole number of 1 or more (module:3)"
    )


def test_bundles_without_or_with_a_damaged_stack_still_load(llm_bundles, tmp_path):
    import shutil

    copy = tmp_path / "old.bundle"
    shutil.copytree(llm_bundles.get("llama"), copy)
    index = json.loads((copy / "index.json").read_text())
    for i, lay in enumerate(index["layers"]):
        if i % 2:
            lay.pop("stack", None)  # as written before stacks were recorded
        elif "stack" in lay:
            lay["stack"] = [{"file": 3, "line": "x"}, *lay["stack"][:1], "junk"]
    (copy / "index.json").write_text(json.dumps(index))
    layers = Bundle(copy).layers
    assert all(lay.stack == () for lay in layers[1::2])
    kept = [lay for lay in layers[0::2] if lay.stack]
    assert kept and all(len(lay.stack) == 1 for lay in kept)  # the malformed frames left out
    assert any(lay.stack[0][:2] == (llm_models.__file__, llm_models.WRAPPER_LINE) for lay in kept)
    line = _line_of(copy, r"^\s+matmul\[")
    assert run_cli("origins", copy, f"code/module.c:{line}", check=True).stdout.count("modeling_llama.py:") >= 4

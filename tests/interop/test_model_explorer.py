"""``tvm-explorer overlays``: Model Explorer node data for a TFLite, an ONNX and a PyTorch bundle.

Each written file is rebuilt with Model Explorer's own node-data classes
(``model_explorer.node_data_builder``) and must serialize back to the same JSON; its graph and
node ids must be nodes that Model Explorer's own adapter, run here on the original model file,
produces (the TFLite adapter of ai_edge_model_explorer_adapter, model-explorer-onnx's
``ONNXAdapter``, model_explorer's ExportedProgram adapter); its values must be those of the
bundle's costs.json and numerics.json.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from model_explorer.node_data_builder import (
    GradientItem,
    GraphNodeData,
    ModelNodeData,
    NodeDataResult,
    ThresholdItem,
)

from conftest import run_cli
from frontends.onnx_graphs import conv_block

# Nodes an adapter adds for what is not an operator (inputs, outputs, constants).
NOT_OPS = {"GraphInputs", "GraphOutputs", "pseudo_const", "Input", "Output", "Initializer", "InitializedInput"}


def _tflite_nodes(model: Path) -> set[tuple[str, str]]:
    import ai_edge_model_explorer_adapter as adapter

    raw = adapter.ConvertFlatbufferDirectlyToJson(adapter.VisualizeConfig(), str(model))
    return {
        (graph["id"], node["id"])
        for collection in json.loads(raw)
        for graph in collection["subgraphs"]
        for node in graph["nodes"]
        if node["label"] not in NOT_OPS
    }


def _graph_nodes(graphs) -> set[tuple[str, str]]:
    return {
        (g.id, n.id) for g in graphs["graphs"] for n in g.nodes if n.label not in NOT_OPS and n.namespace != "inputs"
    }


def _onnx_nodes(model: Path) -> set[tuple[str, str]]:
    from model_explorer_onnx.main import ONNXAdapter

    return _graph_nodes(ONNXAdapter().convert(str(model), {}))


def _torch_nodes(model: Path) -> set[tuple[str, str]]:
    from model_explorer.builtin_pytorch_exportedprogram_adapter import BuiltinPytorchExportedProgramAdapter

    # The settings the Model Explorer server passes (its adapter reads this one unconditionally).
    graphs = BuiltinPytorchExportedProgramAdapter().convert(str(model), {"const_element_count_limit": 16})
    return {key for key in _graph_nodes(graphs) if key[1] != "output"}


@pytest.fixture(scope="module")
def models(tmp_path_factory, gt_model) -> dict[str, tuple[Path, object]]:
    """kind -> (model file, the adapter run on it)."""
    root = tmp_path_factory.mktemp("me-models")
    out: dict[str, tuple[Path, object]] = {"tflite": (gt_model, _tflite_nodes)}
    conv_block(root / "block.onnx")
    out["onnx"] = (root / "block.onnx", _onnx_nodes)
    try:
        import torch

        from frontends import torch_nets
    except ImportError:
        return out
    program, _ = torch_nets.resnet_program()
    torch.export.save(program, root / "resnet.pt2")
    out["torch"] = (root / "resnet.pt2", _torch_nodes)
    return out


def _load_with_model_explorer(path: Path) -> ModelNodeData:
    """The file as Model Explorer's own dataclasses (unknown or missing fields raise)."""
    data = json.loads(path.read_text())
    graphs = {
        graph: GraphNodeData(
            results={node: NodeDataResult(**r) for node, r in g["results"].items()},
            name=g.get("name"),
            gradient=[GradientItem(**x) for x in g.get("gradient", [])],
            thresholds=[ThresholdItem(**x) for x in g.get("thresholds", [])],
        )
        for graph, g in data.items()
    }
    model = ModelNodeData(graphsData=graphs)
    assert json.loads(model.to_json_string()) == data  # what Model Explorer itself would write
    return model


def _expected(bundle: Path) -> dict[str, dict[tuple[str, str], float]]:
    """From the bundle's own files: per Model Explorer node, time and code summed over its
    layers, the largest observed error, and 1/0 for diverges."""
    layers = json.loads((bundle / "index.json").read_text())["layers"]
    key = {lay["id"]: (lay["model_explorer"]["graph"], lay["model_explorer"]["node"]) for lay in layers}
    by_place = {(lay["subgraph"], lay["op_index"]): lay["id"] for lay in layers}
    costs = json.loads((bundle / "costs.json").read_text())
    numerics = json.loads((bundle / "numerics.json").read_text())
    out: dict[str, dict] = {"time_ms.json": {}, "code_lines.json": {}, "error_max_abs.json": {}, "diverges.json": {}}
    for lay in costs["layers"]:
        k = key[lay["id"]]
        out["time_ms.json"][k] = out["time_ms.json"].get(k, 0.0) + lay["time_ms"]
        out["code_lines.json"][k] = out["code_lines.json"].get(k, 0) + lay["code_lines"]
    if any(lay["workspace_bytes"] for lay in costs["layers"]):  # else not written (said why)
        kernels = {k["name"]: k["workspace_bytes"] for k in costs["kernels"]}
        per_node: dict[tuple[str, str], set[str]] = {}
        for lay in costs["layers"]:
            per_node.setdefault(key[lay["id"]], set()).update(lay["kernels"])
        out["workspace_kib.json"] = {k: sum(kernels[n] for n in names) / 1024 for k, names in per_node.items()}
    for e in numerics["layers"]:
        if not e["observed"]:
            continue
        k = key[by_place[(e["subgraph"], e["op_index"])]]
        out["error_max_abs.json"][k] = max(out["error_max_abs.json"].get(k, 0.0), e["max_abs"])
        out["diverges.json"][k] = max(out["diverges.json"].get(k, 0), int(e["diverges"]))
    return out


@pytest.mark.parametrize("kind", ["tflite", "onnx", "torch"])
def test_overlays_key_the_nodes_of_model_explorers_own_adapter(kind, models, bundles, tmp_path):
    if kind not in models:
        pytest.skip("PyTorch is not installed (pip install -e '.[torch]')")
    model, adapter_nodes = models[kind]
    bundle = bundles.get(model, "llvm", "--numerics", "--profile")
    out = tmp_path / "overlays"
    proc = run_cli("overlays", bundle, "-o", out, check=True)
    expected = _expected(bundle)
    if "workspace_kib.json" not in expected:
        assert "skipped workspace_kib.json: no kernel of this model allocates a workspace" in proc.stdout
    assert proc.stdout.count("skipped") == ("workspace_kib.json" not in expected), proc.stdout

    nodes = adapter_nodes(model)
    written = sorted(p.name for p in out.glob("*.json"))
    assert written == sorted([*expected, "overlays.json"])
    for name, values in expected.items():
        model_data = _load_with_model_explorer(out / name)
        got = {(g, n): r.value for g, data in model_data.graphsData.items() for n, r in data.results.items()}
        assert set(got) <= nodes, f"{name}: ids Model Explorer's adapter does not show: {set(got) - nodes}"
        assert got == pytest.approx(values), name
        title = next(iter(model_data.graphsData.values())).name
        assert {"time_ms.json": "ms", "code_lines.json": "lines"}.get(name, "TVM") in title
    # Every operator Model Explorer shows carries the code size: no layer is lost in the keys.
    code = json.loads((out / "code_lines.json").read_text())
    assert {(g, n) for g, d in code.items() for n in d["results"]} == nodes
    readme = (out / "README.md").read_text()
    assert f"model-explorer {model.name}" in readme and "--node_data_paths=" in readme


def test_fused_layers_are_left_out_of_the_error_not_zeroed(models, bundles, tmp_path):
    """The ONNX block is one fused kernel: only its last node's output is observed, so the
    error overlay has that node alone (the others are absent, not 0)."""
    bundle = bundles.get(models["onnx"][0], "llvm", "--numerics", "--profile")
    run_cli("overlays", bundle, "-o", tmp_path / "o", check=True)
    error = json.loads((tmp_path / "o" / "error_max_abs.json").read_text())
    assert list(error["conv_block"]["results"]) == ["/head/scale/Mul"]


def test_unnamed_and_repeated_onnx_node_names_get_the_adapters_ids(tmp_path):
    """model-explorer-onnx names an unnamed node ``node``, ``node_1``… and a repeated name
    ``NAME_1`` (onnx_ir's NameFixPass): the ids recorded per layer are those."""
    import onnx
    from onnx import TensorProto, helper

    from tvm_explorer.frontends.onnx.loader import load_onnx

    nodes = [
        helper.make_node("Relu", ["x"], ["a"]),
        helper.make_node("Neg", ["a"], ["b"], "dup"),
        helper.make_node("Relu", ["b"], ["c"]),
        helper.make_node("Neg", ["c"], ["y"], "dup"),
    ]
    graph = helper.make_graph(
        nodes,
        "",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])],
    )
    path = tmp_path / "names.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), str(path))
    keys = [lay.explorer_key for lay in load_onnx(str(path)).layers]
    assert keys == [("", "node"), ("", "dup"), ("", "node_1"), ("", "dup_1")]
    assert set(keys) == _onnx_nodes(path)


def test_bad_input_is_one_message(models, bundles, gt_model, tmp_path):
    not_bundle = tmp_path / "plain"
    not_bundle.mkdir()
    proc = run_cli("overlays", not_bundle, "-o", tmp_path / "o1")
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert str(not_bundle) in proc.stderr and len(proc.stderr.strip().splitlines()) == 1

    full = bundles.get(gt_model, "llvm", "--numerics", "--profile")
    foreign = tmp_path / "notes"
    foreign.mkdir()
    (foreign / "mine.txt").write_text("keep")
    proc = run_cli("overlays", full, "-o", foreign)
    assert proc.returncode == 2 and "mine.txt" in proc.stderr and (foreign / "mine.txt").read_text() == "keep"

    # A bundle without a profile or numerics: what is skipped is said, and a folder written
    # from a fuller bundle before loses the overlays that would now be stale.
    out = tmp_path / "o2"
    run_cli("overlays", full, "-o", out, check=True)
    static = bundles.get(gt_model, "c")
    proc = run_cli("overlays", static, "-o", out, check=True)
    assert "skipped time_ms.json: run time was not measured" in proc.stdout and "--profile" in proc.stdout
    assert "skipped error_max_abs.json: the bundle has no numerics.json (compile with --numerics)" in proc.stdout
    assert sorted(p.name for p in out.iterdir()) == ["README.md", "code_lines.json", "overlays.json"]
    assert "## Not written" in (out / "README.md").read_text()


def _one_message(proc, *words: str) -> None:
    assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1, proc.stderr
    for word in words:
        assert word in proc.stderr, proc.stderr


def test_damaged_old_and_empty_bundles(bundles, gt_model, tmp_path):
    """A damaged numerics.json: its overlays are skipped naming the file; a bundle compiled
    before the ids were recorded, or with nothing to show: one message, nothing written."""
    import shutil

    damaged = tmp_path / "damaged.bundle"
    shutil.copytree(bundles.get(gt_model, "llvm", "--numerics", "--profile"), damaged)
    (damaged / "numerics.json").write_text('{"schema_version": 1, "reference": 7}')
    proc = run_cli("overlays", damaged, "-o", tmp_path / "d", check=True)
    assert "skipped error_max_abs.json:" in proc.stdout and "numerics.json" in proc.stdout
    assert (tmp_path / "d" / "time_ms.json").is_file() and not (tmp_path / "d" / "error_max_abs.json").exists()

    old = tmp_path / "old.bundle"
    shutil.copytree(bundles.get(gt_model, "c"), old)
    index = json.loads((old / "index.json").read_text())
    for lay in index["layers"]:
        del lay["model_explorer"]
    (old / "index.json").write_text(json.dumps(index))
    _one_message(run_cli("overlays", old, "-o", tmp_path / "o"), "compile the model again")

    empty = tmp_path / "empty.bundle"
    shutil.copytree(bundles.get(gt_model, "c"), empty)
    (empty / "costs.json").unlink()
    _one_message(run_cli("overlays", empty, "-o", tmp_path / "o"), "nothing to write", "--numerics")
    assert not (tmp_path / "o").exists()

"""ONNX node metadata that is not what the exporter writes is ignored with one warning, and a
huge value is neither a traceback nor a bogus "ran out of memory" (issue 26 item 11)."""

from __future__ import annotations

import json

import onnx
import pytest

from conftest import run_cli
from frontends.onnx_graphs import conv_block

SCOPES, CLASSES = "pkg.torch.onnx.name_scopes", "pkg.torch.onnx.class_hierarchy"
DEEP = ("['torch.nn.Module'," * 20000 + "]")[:100000]  # 100 000 characters, nested 16 666 deep

CASES = {
    "int": {SCOPES: "5"},
    "dict-and-null": {SCOPES: "{1: 2}", CLASSES: "null"},
    "deep-class-hierarchy": {SCOPES: "['', 'backbone', 'conv']", CLASSES: DEEP},
    "deep-name-scopes": {SCOPES: "[" * 100000},
    "call": {SCOPES: "[__import__('os').getpid()]"},
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_malformed_metadata_is_ignored_with_a_warning(tmp_path, case):
    path = tmp_path / "meta.onnx"
    model = conv_block(path)
    conv = model.graph.node[0]
    for key, value in CASES[case].items():
        conv.metadata_props.add(key=key, value=value)
    onnx.save(model, str(path))
    # --numerics reads the model twice more (reference, onnxruntime): still one warning.
    extra = ("--target", "llvm", "--numerics") if case == "int" else ()
    proc = run_cli("compile", path, "-o", tmp_path / "b", "--progress", "none", *extra)
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stderr and "out of memory" not in proc.stderr, proc.stderr
    warnings = [ln for ln in proc.stderr.splitlines() if ln.startswith("tvm-explorer: warning:")]
    bad = SCOPES if case != "deep-class-hierarchy" else CLASSES
    assert len(warnings) == 1, proc.stderr
    assert f"metadata {bad} of node '/backbone/conv/Conv' is not a list of names" in warnings[0]
    assert (tmp_path / "b" / "manifest.json").is_file()


def test_a_stack_trace_line_that_is_no_line_number_is_ignored(tmp_path):
    path = tmp_path / "trace.onnx"
    model = conv_block(path)
    traces = [
        'File "/home/u/net.py", line ' + "9" * 4000 + ", in forward",
        'File "/home/u/net.py", line -3, in forward',
        'File "/home/u/net.py", line 22, in forward',
    ]
    for node, trace in zip(model.graph.node, traces):
        node.metadata_props.add(key="pkg.torch.onnx.stack_trace", value=trace)
    onnx.save(model, str(path))
    proc = run_cli("compile", path, "-o", tmp_path / "b", "--progress", "none")
    assert proc.returncode == 0, proc.stderr
    index = json.loads((tmp_path / "b" / "index.json").read_text())
    sources = sorted(str(layer.get("source")) for layer in index["layers"] if layer.get("source"))
    assert sources == [str({"file": "/home/u/net.py", "line": 22})], sources

"""A model's names never become generated code (issue 37 item 3).

TVM's importers name Relax variables after the model's tensors and symbolic sizes, and those
names reach the parameter and variable names of the generated C, CUDA and LLVM; TVM replaced
only ``:``, ``-`` and ``.``, so a TFLite tensor named ``\\n#include "FILE"\\ntvmx`` put a
preprocessor line into ``module.c``, and ``compile --target c --profile`` compiled and ran what
FILE holds. Every name is now a plain identifier before the first pass
(``frontends/plain_names.py``); the original stays in the model document (escaped) and in the
layer table that hovers and tables show.
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path

import pytest
from tests.conftest import run_cli
from tests.tflite_builder import GraphBuilder

# Spliced into a C function body by the #include; runs $TVMX_CMD when the model runs. It also
# makes the line the name's prefix leaves (``fused_conv2d_add_relu_`` + name) well formed.
PAYLOAD_HEADER = """\
#ifndef TVMX_ONCE
#define TVMX_ONCE
#define fused_conv2d_add_relu_
tvmx_d0; extern int system(const char *); extern char *getenv(const char *);
int32_t tvmx_d1 = system(getenv("TVMX_CMD")); int32_t
#endif
"""


LAYER = "conv\n#error tvmx"  # a layer's name with a line break: shown, never compiled


@pytest.fixture(scope="module")
def hostile(tmp_path_factory):
    """The model (its input tensor's name includes the payload header) and its bundle for c,
    compiled with --profile: the generated code is built and run."""
    # TVM turns "-", "." and ":" of a name into "_": the header's path has none of them.
    folder = Path(tempfile.mkdtemp(prefix="tvmx", dir="/tmp"))
    (folder / "payload").write_text(PAYLOAD_HEADER)
    name = f'\n#include "{folder}/payload"\ntvmx'
    root = tmp_path_factory.mktemp("hostile-names")
    g = GraphBuilder(seed=0)
    y = g.relu(g.conv2d(g.input(name, [1, 8, 8, 3]), filters=4, kernel=3, name=LAYER), name="relu")
    g.output(y)
    model = root / "evil.tflite"
    model.write_bytes(g.build())
    marker = root / "PAYLOAD-RAN"
    env = {**os.environ, "TVMX_CMD": f"touch '{marker}'"}
    proc = run_cli(
        "compile", model, "-o", root / "b", "--target", "c", "--profile", "--repeat", "1", "--progress", "none", env=env
    )
    yield {"proc": proc, "bundle": root / "b", "marker": marker, "name": name}
    (folder / "payload").unlink()
    folder.rmdir()


def test_a_tensor_name_does_not_reach_the_generated_c(hostile):
    assert hostile["proc"].returncode == 0, hostile["proc"].stderr
    code = (hostile["bundle"] / "code" / "module.c").read_text()
    # "#include" only in TVM's own header lines: not as a line, not even escaped in a string
    assert [
        ln for ln in code.splitlines() if "#include" in ln and not ln.startswith(('#include "tvm/', "#include <"))
    ] == []
    costs = json.loads((hostile["bundle"] / "costs.json").read_text())
    assert costs["profile"]["status"] == "measured"  # the generated code was built and ran...
    assert not hostile["marker"].exists(), "the payload in the tensor name ran"  # ...and nothing else


def test_the_original_name_stays_in_the_model_document_and_the_hover(hostile):
    from tvm_explorer.bundle.reader import Bundle
    from tvm_explorer.navigation.hover import hover
    from tvm_explorer.navigation.view import BundleView

    bundle = Bundle(hostile["bundle"])
    document = (hostile["bundle"] / "model.tflgraph").read_text()
    shown = hostile["name"].replace("\n", "\\n")
    assert f"  input  {shown} " in document  # escaped: one line, as the file has it
    assert hostile["name"] not in document
    assert "op 0 CONV_2D  conv\\n#error tvmx" in document
    layers = json.loads((hostile["bundle"] / "index.json").read_text())["layers"]
    assert any(lay["name"].startswith(LAYER) for lay in layers), layers  # kept as it is
    view = BundleView(bundle, bundle.preload())
    code = (hostile["bundle"] / "code" / "module.c").read_text()
    offset = code.index("_type_index")  # the graph input's checks: the conv layer's kernel
    text, _ = hover(view, "code/module.c", offset)
    assert "CONV\\_2D" in text and "`conv #error tvmx" in text, text  # inert: one line
    line = code[:offset].count("\n") + 1
    proc = run_cli("origins", hostile["bundle"], f"code/module.c:{line}", check=True)
    assert all(ln.startswith("op ") for ln in proc.stdout.splitlines()), proc.stdout  # no forged line
    assert "op 0 CONV_2D conv\\n#error tvmx" in proc.stdout, proc.stdout


def test_names_are_plain_after_import_and_nothing_else_changes(tmp_path):
    """TFLite and ONNX (a dim_param names a symbolic size): the imported module, renamed, is
    structurally the module TVM's importer made, with the same spans."""
    import onnx
    import tvm_ffi
    from onnx import TensorProto, helper
    from tvm import relax

    from tvm_explorer.frontends import frontend_of, import_any, load_any
    from tvm_explorer.frontends.plain_names import plain
    from tvm_explorer.provenance import OriginTable
    from tvm_explorer.provenance.spans import read_span

    x = helper.make_tensor_value_info("in\n#x y", TensorProto.FLOAT, ["b\n#batch", 3])
    out = helper.make_tensor_value_info("out\n#z", TensorProto.FLOAT, ["b\n#batch", 3])
    nodes = [
        helper.make_node("Relu", ["in\n#x y"], ["mid\n#m"], name="relu\n#node"),
        helper.make_node("Sigmoid", ["mid\n#m"], ["out\n#z"], name="sig"),
    ]
    graph = helper.make_graph(nodes, "g", [x], [out])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), tmp_path / "q.onnx")
    g = GraphBuilder(seed=0)
    g.output(g.relu(g.input("int", [1, 4]), name="x:0\r\n#define"))
    (tmp_path / "q.tflite").write_bytes(g.build())

    for path in ("q.onnx", "q.tflite"):
        model = load_any(tmp_path / path)
        stock = frontend_of(model).import_model(model, OriginTable())
        mod = import_any(model, OriginTable())
        assert tvm_ffi.structural_equal(stock, mod), path
        main = mod["main"]
        names = [p.name for p in main.params] + [v.name for v in relax.analysis.all_vars(main)]
        names += [v.name for v in relax.analysis.defined_symbolic_vars(main)]
        assert names and all(plain(n) == n for n in names), names
        spans = [read_span(b) for block in main.body.blocks for b in block.bindings]
        assert spans == [read_span(b) for block in stock["main"].body.blocks for b in block.bindings]
    assert plain("int") == "int_" and plain("3d") == "_3d" and plain("a" * 300) != plain("a" * 301)
    assert (
        len(plain("a" * 300)) == 256 and plain("ok_name") == "ok_name" and plain("__builtin_trap") == "v__builtin_trap"
    )

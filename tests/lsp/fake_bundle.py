"""A small hand-written bundle for developing and for the damaged-bundle tests.

Documents are written with markers: ``⟪name⟫text⟪/⟫`` marks an indexed range whose kind,
key, origins and link come from ``SPEC[name]``; markers nest and are stripped.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from tvm_explorer.bundle.format import SCHEMA_VERSION

# name -> (kind, key, [(layer, is_output)], link)
SPEC = {
    "L0": ("layer", "layer:0:0", [(0, True)], None),
    "L1": ("layer", "layer:0:1", [(1, True)], None),
    "L2": ("layer", "layer:0:2", [(2, True)], None),
    "Tconv1": ("tensor", "tensor:0:conv1", [(0, True)], None),
    "Tconv1b": ("tensor", "tensor:0:conv1", [(0, True)], None),
    "Trelu1": ("tensor", "tensor:0:relu1", [(1, True)], None),
    "Trelu1b": ("tensor", "tensor:0:relu1", [(1, True)], None),
    "Tout": ("tensor", "tensor:0:out", [(2, True)], None),
    "Fmain": ("function", "func:main", [(0, True), (1, True), (2, True)], None),
    "Blv": ("binding", "bind:main:lv", [(0, True)], None),
    "Blv1": ("binding", "bind:main:lv1", [(1, True)], None),
    "Bgv": ("binding", "bind:main:gv", [(2, True)], None),
    "BlvC": ("binding", "bind:main:lv", [(0, True)], "prim:conv2d"),
    "Blv1C": ("binding", "bind:main:lv1", [(1, True)], "prim:relu"),
    "BgvC": ("binding", "bind:main:gv", [(2, True)], "prim:add"),
    "Blv2F": ("binding", "bind:main:lv2", [(0, True), (1, True)], "prim:fused_conv2d_relu"),
    "PconvR": ("primfunc", "prim:conv2d", [(0, True)], None),
    "PreluR": ("primfunc", "prim:relu", [(1, True)], None),
    "PaddR": ("primfunc", "prim:add", [(2, True)], None),
    "Pfused": ("primfunc", "prim:fused_conv2d_relu", [(0, True), (1, True)], None),
    "Padd": ("primfunc", "prim:add", [(2, True)], None),
    "LFc": ("loop", "loop:fused_conv2d_relu:0", [(0, True), (1, True)], None),
    "LFcT": ("loop", "loop:fused_conv2d_relu:0", [(0, True), (1, True)], "trace:fused_conv2d_relu:2"),
    "LFa": ("loop", "loop:add:0", [(2, True)], None),
    "S1": ("stmt", "store:1", [(0, True)], None),
    "S2": ("stmt", "store:2", [(1, True)], None),
    "S3": ("stmt", "store:3", [(2, True)], None),
}

MODEL = """\
# model tiny.tflite
subgraph 0
⟪L0⟫  op 0  CONV_2D  (input, w0) -> ⟪Tconv1⟫conv1⟪/⟫ [1,8,8,4] float32⟪/⟫
⟪L1⟫  op 1  RELU  (⟪Tconv1b⟫conv1⟪/⟫) -> ⟪Trelu1⟫relu1⟪/⟫ [1,8,8,4] float32⟪/⟫
⟪L2⟫  op 2  ADD  (⟪Trelu1b⟫relu1⟪/⟫, c) -> ⟪Tout⟫out⟪/⟫ [1,8,8,4] float32⟪/⟫
"""

RELAX_IMPORT = """\
@I.ir_module
class Module:
⟪Fmain⟫    @R.function
    def main(x: R.Tensor((1, 8, 8, 3), "float32")):
        with R.dataflow():
            ⟪Blv⟫lv = R.nn.conv2d(x, w)⟪/⟫
            ⟪Blv1⟫lv1 = R.nn.relu(lv)⟪/⟫

            ⟪Bgv⟫gv = R.add(lv1, c)⟪/⟫
            R.output(gv)
        return gv⟪/⟫
"""

RELAX_LEGALIZED = """\
# 🙂 legalized
@I.ir_module
class Module:
⟪PconvR⟫    @T.prim_func
    def conv2d(x: T.Buffer((1, 8, 8, 3)), y: T.Buffer((1, 8, 8, 4))):
        for i in range(256):
            ⟪S1⟫y[i] = x[i] * w[i]⟪/⟫⟪/⟫
⟪PreluR⟫    @T.prim_func
    def relu(x: T.Buffer((1, 8, 8, 4)), y: T.Buffer((1, 8, 8, 4))):
        for i in range(256):
            ⟪S2⟫y[i] = T.max(x[i], 0)⟪/⟫⟪/⟫
⟪PaddR⟫    @T.prim_func
    def add(x: T.Buffer((1, 8, 8, 4)), y: T.Buffer((1, 8, 8, 4))):
        for i in range(256):
            ⟪S3⟫y[i] = x[i] + c[i]⟪/⟫⟪/⟫
⟪Fmain⟫    @R.function
    def main(x: R.Tensor((1, 8, 8, 3), "float32")):
        with R.dataflow():
            ⟪BlvC⟫lv = R.call_tir(cls.conv2d, (x,))⟪/⟫
            ⟪Blv1C⟫lv1 = R.call_tir(cls.relu, (lv,))⟪/⟫
            ⟪BgvC⟫gv = R.call_tir(cls.add, (lv1,))⟪/⟫
            R.output(gv)
        return gv⟪/⟫
"""

RELAX_FUSED = """\
@I.ir_module
class Module:
⟪Fmain⟫    @R.function
    def main(x: R.Tensor((1, 8, 8, 3), "float32")):
        with R.dataflow():
            ⟪Blv2F⟫lv2 = R.call_tir(cls.fused_conv2d_relu, (x,))⟪/⟫
            ⟪BgvC⟫gv = R.call_tir(cls.add, (lv2,))⟪/⟫
            R.output(gv)
        return gv⟪/⟫
"""

TIR_INPUT = """\
@I.ir_module
class Module:
⟪Pfused⟫    @T.prim_func
    def fused_conv2d_relu(x: T.Buffer((1, 8, 8, 3)), y: T.Buffer((1, 8, 8, 4))):
        t = T.alloc_buffer((256,))
        ⟪LFc⟫for i in range(256):
            ⟪S1⟫t[i] = x[i] * w[i]⟪/⟫
            ⟪S2⟫y[i] = T.max(t[i], 0)⟪/⟫⟪/⟫⟪/⟫
⟪Padd⟫    @T.prim_func
    def add(x: T.Buffer((1, 8, 8, 4)), y: T.Buffer((1, 8, 8, 4))):
        ⟪LFa⟫for i in range(256):
            ⟪S3⟫y[i] = x[i] + c[i]⟪/⟫⟪/⟫⟪/⟫
"""

TIR_LOWERED = """\
@I.ir_module
class Module:
⟪Pfused⟫    @T.prim_func
    def fused_conv2d_relu(x_1: T.handle, y_1: T.handle):
        t = T.allocate([256], "float32", "global")
        ⟪LFcT⟫for i in range(256):
            ⟪S1⟫t[i] = x_1[i] * w[i]⟪/⟫
            ⟪S2⟫y_1[i] = T.max(t[i], T.float32(0))⟪/⟫⟪/⟫⟪/⟫
⟪Padd⟫    @T.prim_func
    def add(x_1: T.handle, y_1: T.handle):
        ⟪LFa⟫for i in range(256):
            ⟪S3⟫y_1[i] = x_1[i] + c[i]⟪/⟫⟪/⟫⟪/⟫
"""

CODE = """\
#include <tvm/runtime/c_runtime_api.h>

⟪Pfused⟫TVM_DLL int32_t __tvm_ffi_fused_conv2d_relu(void* args) {
  float t[256];
  ⟪LFc⟫for (int32_t i = 0; i < 256; ++i) {
    ⟪S1⟫t[i] = (x_1[i] * w[i]);⟪/⟫
    ⟪S2⟫y_1[i] = max(t[i], 0.000000e+00f);⟪/⟫
  }⟪/⟫
  return 0;
}⟪/⟫

⟪Padd⟫TVM_DLL int32_t __tvm_ffi_add(void* args) {
  ⟪LFa⟫for (int32_t i = 0; i < 256; ++i) {
    ⟪S3⟫y_1[i] = (x_1[i] + c[i]);⟪/⟫
  }⟪/⟫
  return 0;
}⟪/⟫
"""

DOCUMENTS = [
    ("model.tflgraph", "model", None, MODEL),
    ("relax/000-import.relax", "relax", 0, RELAX_IMPORT),
    ("relax/004-LegalizeOps.relax", "relax", 4, RELAX_LEGALIZED),
    ("relax/007-FuseTIR.relax", "relax", 7, RELAX_FUSED),
    ("tir/000-input.tir", "tir", 20, TIR_INPUT),
    ("tir/012-s_tir.LowerOpaqueBlock.tir", "tir", 32, TIR_LOWERED),
    ("code/module.c", "code", None, CODE),
]

LANGUAGES = {"model": "tflgraph", "relax": "tvm-relax", "tir": "tvm-tir", "code": "c"}

LAYERS = [
    {
        "id": 0,
        "subgraph": 0,
        "op_index": 0,
        "opcode": "CONV_2D",
        "outputs": ["conv1"],
        "output_types": [{"shape": [1, 8, 8, 4], "dtype": "float32"}],
    },
    {
        "id": 1,
        "subgraph": 0,
        "op_index": 1,
        "opcode": "RELU",
        "outputs": ["relu1"],
        "output_types": [{"shape": [1, 8, 8, 4], "dtype": "float32"}],
    },
    {
        "id": 2,
        "subgraph": 0,
        "op_index": 2,
        "opcode": "ADD",
        "outputs": ["out"],
        "output_types": [{"shape": [1, 8, 8, 4], "dtype": "float32"}],
    },
]

_MARK = re.compile(r"⟪(/|\w+)⟫")


def strip_markers(marked: str) -> tuple[str, list[tuple[int, int, str]]]:
    """The text without markers, and ``(start, end, name)`` of every marked range."""
    out, ranges, stack, pos = [], [], [], 0
    length = 0
    for match in _MARK.finditer(marked):
        chunk = marked[pos : match.start()]
        out.append(chunk)
        length += len(chunk)
        pos = match.end()
        if match.group(1) == "/":
            name, start = stack.pop()
            ranges.append((start, length, name))
        else:
            stack.append((match.group(1), length))
    out.append(marked[pos:])
    assert not stack, stack
    return "".join(out), ranges


def texts() -> dict[str, str]:
    """Each document's text (markers stripped)."""
    return {path: strip_markers(marked)[0] for path, _, _, marked in DOCUMENTS}


def write_fake_bundle(root: Path) -> Path:
    """Write the fake bundle into directory ``root`` (created); returns ``root``."""
    root.mkdir(parents=True, exist_ok=True)
    origin_sets: list[list] = [[]]
    set_ids: dict[tuple, int] = {(): 0}
    index_docs, manifest_docs = {}, []
    for path, stage, pass_index, marked in DOCUMENTS:
        text, ranges = strip_markers(marked)
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_text(text, encoding="utf-8")
        rows = []
        for start, end, name in ranges:
            kind, key, origins, link = SPEC[name]
            members = tuple(sorted((lid, out) for lid, out in origins))
            if members not in set_ids:
                set_ids[members] = len(origin_sets)
                origin_sets.append([list(m) for m in members])
            row = [start, end, set_ids[members], kind, key]
            if link:
                row.append(link)
            rows.append(row)
        rows.sort(key=lambda r: (r[0], -r[1]))
        index_docs[path] = {"length": len(text), "ranges": rows}
        entry = {"path": path, "stage": stage, "language": LANGUAGES[stage]}
        if pass_index is not None:
            entry["pass_index"] = pass_index
        manifest_docs.append(entry)
    (root / "traces").mkdir(exist_ok=True)
    (root / "traces/fused_conv2d_relu.py").write_text(
        "def apply_trace(sch):\n    b0 = sch.get_sblock('t')\n    l1, = sch.get_loops(b0)\n", "utf-8"
    )
    passes = [
        {
            "index": 0,
            "stage": "relax",
            "name": "import",
            "changed": True,
            "before": None,
            "after": "relax/000-import.relax",
        },
        {
            "index": 1,
            "stage": "relax",
            "name": "DispatchSampling",
            "changed": False,
            "before": "relax/000-import.relax",
            "after": "relax/000-import.relax",
        },
        {
            "index": 4,
            "stage": "relax",
            "name": "LegalizeOps",
            "changed": True,
            "before": "relax/000-import.relax",
            "after": "relax/004-LegalizeOps.relax",
        },
        {
            "index": 7,
            "stage": "relax",
            "name": "FuseTIR",
            "changed": True,
            "before": "relax/004-LegalizeOps.relax",
            "after": "relax/007-FuseTIR.relax",
        },
        {
            "index": 20,
            "stage": "tir",
            "name": "input",
            "changed": True,
            "before": "relax/007-FuseTIR.relax",
            "after": "tir/000-input.tir",
        },
        {
            "index": 32,
            "stage": "tir",
            "name": "s_tir.LowerOpaqueBlock",
            "changed": True,
            "before": "tir/000-input.tir",
            "after": "tir/012-s_tir.LowerOpaqueBlock.tir",
        },
    ]
    manifest = {
        "format": "tvm-explorer-bundle",
        "schema_version": SCHEMA_VERSION,
        "complete": True,
        "created": "2026-01-01T00:00:00Z",
        "tool": {"tvm_explorer": "0.1.0", "tvm": "0.27.0.post1"},
        "model": {"file": "tiny.tflite", "sha256": "0" * 64, "subgraphs": 1, "operators": 3},
        "target": "c",
        "options": {"spans": True, "exact_origins": False, "schedule_records": True},
        "documents": manifest_docs,
        "passes": passes,
        "traces": [{"primfunc": "fused_conv2d_relu", "rule": "Fallback", "path": "traces/fused_conv2d_relu.py"}],
    }
    index = {"schema_version": SCHEMA_VERSION, "layers": LAYERS, "origin_sets": origin_sets, "documents": index_docs}
    (root / "index.json").write_text(json.dumps(index), encoding="utf-8")
    (root / "manifest.json").write_text(json.dumps(manifest, indent=1), encoding="utf-8")
    return root

"""LLVM IR (``--target llvm``, and CUDA's host code) answers inside every function generated
from a PrimFunc — the ``<PrimFunc>_compute_`` body where the work is, not only the packed
entry — and an instruction TVM located at a TIR store (its ``!dbg`` DILocation) has that
store's origins and key. Ground truth: the PrimFunc names TVM gives (``fused_conv2d_add_relu``
is op 0's CONV_2D) and the final TIR document's own stores."""

from __future__ import annotations

import re

import pytest
import pytest_lsp
from lsprotocol import types
from pytest_lsp import LanguageClient
from tests.conftest import run_cli

from tvm_explorer.bundle.reader import Bundle

from .conftest import MODELS_DIR, SERVER, session_bundle, start_session
from .real import landing, pos, td

LL = "code/host.ll"


@pytest.fixture(scope="module")
def llvm_workspace(tmp_path_factory, bundles):
    folder = tmp_path_factory.mktemp("llvm-ws")
    (folder / "bundles").mkdir()
    out = session_bundle(bundles, MODELS_DIR / "small_cnn_fp32.tflite", folder / "bundles" / "small_cnn_ll", "llvm")
    return folder, Bundle(out)


@pytest_lsp.fixture(config=SERVER, scope="module")
async def client(lsp_client: LanguageClient, llvm_workspace):
    await start_session(lsp_client, llvm_workspace[0], expect=1)
    yield
    await lsp_client.shutdown_session()


def _function(text: str, name: str) -> tuple[int, int]:
    """[start, end) of the LLVM IR function ``@name``."""
    m = re.search(rf"^define\b[^\n]*@{re.escape(name)}\(", text, re.M)
    assert m, name
    return m.start(), text.index("\n}\n", m.end())


def _instruction_in(
    text: str, body: tuple[int, int], pattern: str = r"\n  (%\w+ = (fadd|fmul|load|store)|store) "
) -> int:
    m = re.compile(pattern).search(text, body[0], body[1])
    assert m, text[body[0] : body[0] + 500]
    return m.start() + 3


async def test_hover_inside_a_compute_function(client, llvm_workspace):
    bundle = llvm_workspace[1]
    text = bundle.text(LL)
    offset = _instruction_in(text, _function(text, "fused_conv2d_add_relu_compute_"))
    hover = await client.text_document_hover_async(types.HoverParams(td(bundle, LL), pos(text, offset)))
    assert hover is not None, text[offset : offset + 120]
    assert re.search(r"\*\*CONV\\_2D\*\* `[^`]+` — op 0", hover.contents.value), hover.contents.value


async def test_definition_inside_a_compute_function_lands_on_the_layer(client, llvm_workspace):
    bundle = llvm_workspace[1]
    text = bundle.text(LL)
    offset = _instruction_in(text, _function(text, "softmax_compute_"))
    found = await client.text_document_definition_async(types.DefinitionParams(td(bundle, LL), pos(text, offset)))
    landed = [landing(bundle, loc) for loc in found]
    assert landed and all(rel == "model.tflgraph" for rel, _, _ in landed), landed
    assert [re.match(r"op \d+ \w+", t).group(0) for _, t, _ in landed] == ["op 7 SOFTMAX"]


def _keyed_stores(bundle: Bundle, path: str) -> dict[str, tuple[str, int]]:
    """store key -> (PrimFunc key, origin set) of the stmt ranges inside functions."""
    out, current, end = {}, None, -1
    for rng in sorted(bundle.index(path).ranges, key=lambda r: (r.start, -r.end)):
        if rng.kind == "primfunc":
            current, end = rng.key, rng.end
        elif rng.kind == "stmt" and rng.key.startswith("store:") and current and rng.start < end:
            out.setdefault(rng.key, set()).add((current, rng.origin_set))
    return out


def test_located_instructions_are_the_final_tirs_stores(llvm_workspace):
    bundle = llvm_workspace[1]
    final_tir = [d.path for d in bundle.documents if d.stage == "tir"][-1]
    tir, ll = _keyed_stores(bundle, final_tir), _keyed_stores(bundle, LL)
    assert len(ll) >= 5, "no instruction line maps to a TIR store"
    for key, seen in ll.items():
        assert key in tir and seen <= tir[key], (key, seen, tir.get(key))


def test_every_instruction_of_a_compute_function_has_an_origin_in_the_cli(llvm_workspace):
    bundle = llvm_workspace[1]
    text = bundle.text(LL)
    start, end = _function(text, "fused_conv2d_add_relu_compute_")
    first = text.count("\n", 0, start) + 1
    lines = text[start:end].split("\n")
    checked = 0
    for k in range(1, len(lines), max(1, len(lines) // 15)):
        if not lines[k].strip():
            continue
        proc = run_cli("origins", str(bundle.root), f"{LL}:{first + k}", timeout=120)
        assert proc.returncode == 0, proc.stderr
        assert "no origin recorded" not in proc.stdout and "op 0 CONV_2D" in proc.stdout, (k, lines[k], proc.stdout)
        checked += 1
    assert checked >= 10


def test_parallel_lambdas_belong_to_their_primfunc():
    """A parallel loop becomes ``__tvm_parallel_lambda`` (called from the kernel's body):
    real TVM output, its functions assigned to PrimFuncs; runtime helpers stay unassigned."""
    import tvm
    from tvm.script import ir as I
    from tvm.script import tirx as T

    from tvm_explorer.capture.codegen import llvm_functions

    @I.ir_module
    class Mod:
        @T.prim_func
        def add_one(a: T.Buffer((64, 64), "float32"), b: T.Buffer((64, 64), "float32")):
            T.func_attr({"global_symbol": "add_one"})
            for i in T.parallel(64):
                for j in range(64):
                    b[i, j] = a[i, j] + T.float32(1)

        @T.prim_func
        def twice(a: T.Buffer((64,), "float32"), b: T.Buffer((64,), "float32")):
            T.func_attr({"global_symbol": "twice"})
            for i in T.parallel(64):
                b[i] = a[i] * T.float32(2)

    text = tvm.tirx.build(Mod, target="llvm").inspect_source("ll")
    found = {f.name: f.primfunc for f in llvm_functions(text.split("\n"), {"add_one": "add_one", "twice": "twice"})}
    lambdas = {n: p for n, p in found.items() if n.startswith("__tvm_parallel_lambda")}
    assert sorted(lambdas.values()) == ["add_one", "twice"], found
    assert found["__tvm_ffi_add_one"] == "add_one"
    assert found.get("__truncsfhf2", None) is None


def test_cuda_host_code_answers_inside_its_compute_functions(bundles):
    """CUDA's host code (LLVM IR): the body that launches a kernel is that kernel's PrimFunc."""
    bundle = Bundle(bundles.get(MODELS_DIR / "small_cnn_fp32.tflite", "cuda"))
    text = bundle.text(LL)
    start, end = _function(text, "softmax_compute_")
    line = text.count("\n", 0, start) + 3
    proc = run_cli("origins", str(bundle.root), f"{LL}:{line}", timeout=120)
    assert proc.returncode == 0 and "op 7 SOFTMAX" in proc.stdout, (text.split("\n")[line - 1], proc.stdout)

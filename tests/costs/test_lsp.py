"""Costs through the real language server: hover, code lenses, ``tvmExplorer/costs``,
``tvmExplorer/kernelHeat`` and pass times in ``tvmExplorer/listPasses``."""

from __future__ import annotations

import re

import pytest
from lsprotocol import types
from tests.conftest import run_cli
from tests.lsp.conftest import uri, workspace_client

from tvm_explorer.bundle.reader import Bundle

from .conftest import dominant_dense


@pytest.fixture(scope="module")
def workspace(tmp_path_factory):
    folder = tmp_path_factory.mktemp("costs-ws")
    model = dominant_dense(folder / "dense.tflite")
    run_cli("compile", model, "-o", folder / "dense.bundle", "--profile", "--repeat", "3", check=True)
    return folder


@pytest.fixture(scope="module")
def dense(workspace):
    return Bundle(workspace / "dense.bundle")


client = workspace_client()


def td(bundle: Bundle, path: str) -> types.TextDocumentIdentifier:
    return types.TextDocumentIdentifier(uri(bundle.root / path))


LENS = re.compile(r"^(\d+\.\d\d) ms · (\d+) % · (\d+) C lines( · [\d.]+ (?:B|KiB|MiB))?( · shared kernel)?$")


async def test_code_lens_per_layer_shows_its_costs(client, dense):
    lenses = await client.text_document_code_lens_async(types.CodeLensParams(td(dense, "model.tflgraph")))
    costs = {lay["id"]: lay for lay in dense.costs()["layers"]}
    mine = [lens for lens in lenses if " ms · " in lens.command.title]
    assert len(mine) == len(dense.layers)
    model_lines = dense.text("model.tflgraph").split("\n")
    for lens in mine:
        m = LENS.match(lens.command.title)
        assert m, lens.command.title
        entry = model_lines[lens.range.start.line]
        lay = next(c for c in costs.values() if entry.startswith(f"op {c['op_index']} {c['opcode']}"))
        assert float(m.group(1)) == pytest.approx(lay["time_ms"], abs=0.006)
        assert int(m.group(3)) == lay["code_lines"]
        if entry.startswith("op 0 FULLY_CONNECTED"):
            assert int(m.group(2)) > 50 and m.group(5)


async def test_hover_shows_the_layers_costs_and_the_kernel(client, dense):
    text = dense.text("code/module.c")
    line = next(
        i for i, ln in enumerate(text.split("\n")) if "T_matmul_NT" in ln or "matmul" in ln and "=" in ln and "[" in ln
    )
    hover = await client.text_document_hover_async(
        types.HoverParams(td(dense, "code/module.c"), types.Position(line, 6))
    )
    value = hover.contents.value
    assert "**FULLY\\_CONNECTED**" in value  # Markdown-escaped opcode
    # The kernel serves several layers here: its line carries the cost (no line per layer).
    assert re.search(r"\*\*Kernel\*\* `fused_matmul\w*`: \d+\.\d\d ms \(\d+ %\) in 1 call", value), value
    assert "CPU time, median of 3 runs" in value
    model = dense.text("model.tflgraph").split("\n")
    op0 = next(i for i, ln in enumerate(model) if ln.startswith("op 0 FULLY_CONNECTED"))
    hover = await client.text_document_hover_async(
        types.HoverParams(td(dense, "model.tflgraph"), types.Position(op0, 2))
    )
    assert "**Cost**" in hover.contents.value and "shared with other layers" in hover.contents.value


async def test_costs_request_ranks_layers_with_locations(client, dense):
    result = await client.protocol.send_request_async("tvmExplorer/costs", {"bundle": uri(dense.root)})
    assert result.measured and result.total_ms > 0
    top = result.layers[0]
    assert top.opcode == "FULLY_CONNECTED" and top.rank == 1 and top.share > 0.5
    assert top.location.uri.endswith("model.tflgraph")
    times = [lay.time_ms for lay in result.layers]
    assert times == sorted(times, reverse=True)


async def test_kernel_heat_marks_every_kernel_of_the_c_and_tir(client, dense):
    result = await client.protocol.send_request_async(
        "tvmExplorer/kernelHeat", {"uri": uri(dense.root / "code/module.c")}
    )
    kernels = {m.kernel: m for m in result.marks}
    costs = {k["name"]: k for k in dense.costs()["kernels"]}
    assert set(kernels) == set(costs)
    hottest = max(result.marks, key=lambda m: m.heat)
    assert hottest.heat == 1.0 and hottest.kernel.startswith("fused_matmul")
    assert "ms" in hottest.label
    last_tir = [d.path for d in dense.documents if d.stage == "tir"][-1]
    tir = await client.protocol.send_request_async("tvmExplorer/kernelHeat", {"uri": uri(dense.root / last_tir)})
    assert {m.kernel for m in tir.marks} == set(costs)
    model = await client.protocol.send_request_async(
        "tvmExplorer/kernelHeat", {"uri": uri(dense.root / "model.tflgraph")}
    )
    assert model.marks == []


async def test_list_passes_carries_compile_time(client, dense):
    result = await client.protocol.send_request_async("tvmExplorer/listPasses", {"bundle": uri(dense.root)})
    timed = {p.name: p for p in result.passes if p.ms is not None}
    assert timed["FuseOps"].ms > 0 and timed["FuseOps"].changed_functions > 0
    assert next(p for p in result.passes if p.name == "import").ms is None


async def test_kernel_start_opens_the_hottest_kernel_at_its_first_loop(client, dense):
    """``tvmExplorer/kernelStart``: a profiled bundle's C opens at its hottest kernel (the
    measured times), on the first loop of its function, past the argument checks."""
    got = await client.protocol.send_request_async(
        "tvmExplorer/kernelStart", {"uri": uri(dense.root / "code/module.c")}
    )
    measured = {k["name"]: k["time_ms"] for k in dense.costs()["kernels"] if k.get("time_ms") is not None}
    assert got.profiled and got.kernel == max(measured, key=measured.get)
    text = dense.text("code/module.c")
    lines = text.split("\n")
    assert lines[got.range.start.line].lstrip().startswith("for ("), lines[got.range.start.line]
    [kernel] = [
        r for r in dense.index("code/module.c").ranges if r.kind == "primfunc" and r.key == f"prim:{got.kernel}"
    ][:1]
    assert text[: kernel.start].count("\n") < got.range.start.line < text[: kernel.end].count("\n")
    # Not a generated-code document: nothing to open at.
    assert (
        await client.protocol.send_request_async("tvmExplorer/kernelStart", {"uri": uri(dense.root / "model.tflgraph")})
        is None
    )

"""Layer Places and the code lens on real bundles (c and cuda): places are the statements
computing the layer (Relax bookkeeping is marked apart), grouped by document and function, and
the view's summary is the lens's text."""

from __future__ import annotations

import re

from lsprotocol import types

from .real import landing, pos, real_bundle, real_client
from .test_stage_jumps import location, step, td

client = real_client()
cnn = real_bundle("small_cnn_fp32")
cuda = real_bundle("small_cnn_fp32_cuda")

BOOKKEEPING = re.compile(r"R\.(memory|vm)\.\w+|R\.builtin\.alloc_tensor|R\.null_value|vm\.builtin\.")


async def places_and_lens(client, bundle):
    model = bundle.text("model.tflgraph")
    at = pos(model, model.index("op 2 CONV_2D"))
    result = await step(client, "tvmExplorer/layerPlaces", bundle, "model.tflgraph", at)
    lenses = await client.text_document_code_lens_async(types.CodeLensParams(td(bundle, "model.tflgraph")))
    lens = next(l for l in lenses if l.range.start.line == at.line and "generated code" in l.command.title)
    return result, lens.command.title


def lasts(result, stage):
    return [p for p in result["places"] if p["stage"] == stage and p["last_of_stage"] and p["role"] == "compute"]


async def test_relax_bookkeeping_is_marked_apart_and_not_counted(client, cnn):
    result, lens = await places_and_lens(client, cnn)
    relax = [p for p in result["places"] if p["stage"] == "relax"]
    roles = {}
    for p in relax:
        text = landing(cnn, location(p))[1]
        roles.setdefault(p["role"], []).append(text)
    # shape_heap = R.null_value(), match_shape, alloc_storage, kill_object: bookkeeping
    assert roles["bookkeeping"] and all(
        BOOKKEEPING.search(t) or re.fullmatch(r"[\w.]+(: .*)? = \w+", t) for t in roles["bookkeeping"]
    ), roles["bookkeeping"]
    assert any("R.null_value()" in t for t in roles["bookkeeping"])
    assert any("match_shape" in t for t in roles["bookkeeping"])
    assert not any(BOOKKEEPING.search(t) for t in roles["compute"]), roles["compute"]
    # the unfused conv2d / add / relu bindings before FuseOps compute the layer
    assert any("R.nn.conv2d(" in t for t in roles["compute"])
    # The last Relax document: only the call of the fused PrimFunc, as the lens counts it.
    last_relax = [landing(cnn, location(p))[1] for p in lasts(result, "relax")]
    assert len(last_relax) == 1 and last_relax[0].startswith("fused_conv2d1_add1_relu1(")
    assert lens == result["summary"] == "1 function in generated code · 2 in IR"


async def test_unrolled_cuda_stores_are_one_function_and_the_lens_agrees(client, cuda):
    result, lens = await places_and_lens(client, cuda)
    code = [p for p in result["places"] if p["stage"] == "code"]
    assert len(code) > 100  # every unrolled store is a place ...
    kernels = {(p["uri"].rsplit("/", 1)[-1], p["function"]) for p in code}
    # ... of one kernel (and its host-side launcher in host.ll): the lens counts functions
    assert ("device.cu", "fused_conv2d1_add1_relu1_kernel") in kernels and len(kernels) == 2, kernels
    text = cuda.text("code/device.cu")
    for p in code:
        if p["uri"].endswith("/device.cu"):
            rel, _, _ = landing(cuda, location(p))
            line_start = sum(len(x) + 1 for x in text.split("\n")[: p["range"]["start"]["line"]])
            head = text.rfind('extern "C" __global__', 0, line_start)
            assert f" {p['function']}(" in text[head : text.index("\n", head)]
    # The view's "last document of each stage" rows, grouped by document and function, are
    # what the lens counts.
    ir = {(p["uri"], p["function"]) for stage in ("relax", "tir") for p in lasts(result, stage)}
    assert lens == result["summary"] == f"2 functions in generated code · {len(ir)} in IR"

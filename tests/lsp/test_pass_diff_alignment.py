"""``tvmExplorer/passDiffAlignment`` on a real bundle: the functions of a pass's two documents
aligned by name from the server's index, as VS Code's pass diff lays its sides out
(passDiffAlign.ts). Ground truth is the bundle's own text: each range holds the function's
decorator to the end of its body, ``unchanged`` functions have the same text on both sides."""

from __future__ import annotations

import asyncio
import re

import pytest
from pygls.exceptions import JsonRpcException

from tvm_explorer.bundle.reader import Bundle

from .conftest import send_raw, uri
from .real import real_bundle, real_client

client = real_client()
cnn = real_bundle("small_cnn_fp32")
int8 = real_bundle("small_cnn_int8")

METHOD = "tvmExplorer/passDiffAlignment"


def _pass(bundle: Bundle, name: str) -> dict:
    return next(p for p in bundle.manifest["passes"] if p["name"] == name)


async def _align(client, bundle: Bundle, before: str, after: str):
    params = {"before": uri(bundle.root / before), "after": uri(bundle.root / after)}
    return await client.protocol.send_request_async(METHOD, params)


def _text(text: str, rng) -> str:
    lines = text.split("\n")
    start = sum(len(x) + 1 for x in lines[: rng.start.line]) + rng.start.character
    end = sum(len(x) + 1 for x in lines[: rng.end.line]) + rng.end.character
    return text[start:end]


def _check_ranges(text: str, rng, name: str) -> str:
    """The function's text at ``rng``: from its decorator to the last line of its body."""
    got = _text(text, rng)
    assert got.startswith("@") and re.search(rf"^    def {re.escape(name)}\(", got, re.M), got[:200]
    lines = text.split("\n")
    after = lines[rng.end.line + 1] if rng.end.line + 1 < len(lines) else ""
    assert rng.end.character == len(lines[rng.end.line]) and not after.startswith("        "), (name, after)
    return got


async def test_fuse_ops_adds_fused_functions_and_changes_main(client, cnn):
    p = _pass(cnn, "FuseOps")
    got = await _align(client, cnn, p["before"], p["after"])
    a, b = cnn.text(p["before"]), cnn.text(p["after"])
    by_name = {f.name: f for f in got.functions}
    # The after-document's order: its functions as they stand in it.
    assert [f.name for f in got.functions] == re.findall(r"^    def (\w+)\(", b, re.M)
    fused = [f for f in got.functions if f.name.startswith("fused_")]
    assert fused and all(f.change == "added" and f.before is None for f in fused)
    assert by_name["main"].change == "changed"
    for f in got.functions:
        if f.after is not None:
            text_b = _check_ranges(b, f.after, f.name)
        if f.before is not None:
            text_a = _check_ranges(a, f.before, f.name)
        if f.change in ("changed", "unchanged"):
            assert (text_a == text_b) == (f.change == "unchanged"), f.name
    assert got.unchanged == sum(f.change == "unchanged" for f in got.functions) > 0
    # The module header: everything before the first function, on each side.
    for text, header in ((a, got.before_header), (b, got.after_header)):
        assert (header.start.line, header.start.character) == (0, 0)
        assert "class Module:" in _text(text, header) and "def " not in _text(text, header)


async def test_fuse_tir_removes_the_functions_it_fused_and_lists_them_last(client, cnn):
    p = _pass(cnn, "FuseTIR")
    got = await _align(client, cnn, p["before"], p["after"])
    a, b = cnn.text(p["before"]), cnn.text(p["after"])
    removed = [f for f in got.functions if f.change == "removed"]
    names_b = set(re.findall(r"^    def (\w+)\(", b, re.M))
    assert {f.name for f in removed} == set(re.findall(r"^    def (\w+)\(", a, re.M)) - names_b
    assert removed and all(f.after is None for f in removed)
    assert got.functions[-len(removed) :] == removed  # after every function of the after-document
    for f in removed:
        _check_ranges(a, f.before, f.name)
    # A fused Relax function became a PrimFunc of the same name: paired, changed.
    fused = next(f for f in got.functions if f.name.startswith("fused_conv2d"))
    assert fused.change == "changed"
    assert "@R.function" in _text(a, fused.before) and "@T.prim_func" in _text(b, fused.after)


async def test_legalize_ops_adds_primfuncs_and_a_tir_pass_changes_them_in_place(client, cnn):
    p = _pass(cnn, "LegalizeOps")
    got = await _align(client, cnn, p["before"], p["after"])
    added = [f for f in got.functions if f.change == "added"]
    assert len(added) >= 5 and got.unchanged == 0
    assert {f.change for f in got.functions} == {"added", "changed"}  # main calls them now
    p = _pass(cnn, "s_tir.LowerInitBlock")
    got = await _align(client, cnn, p["before"], p["after"])
    changed = [f for f in got.functions if f.change == "changed"]
    assert changed and all(f.change in ("changed", "unchanged") for f in got.functions)
    a, b = cnn.text(p["before"]), cnn.text(p["after"])
    for f in changed:
        assert "T.init()" in _check_ranges(a, f.before, f.name) and "T.init()" not in _check_ranges(b, f.after, f.name)


async def test_a_pass_that_changed_nothing_has_every_function_unchanged(client, cnn):
    p = next(q for q in cnn.manifest["passes"] if q["stage"] == "tir" and not q["changed"] and q["before"])
    got = await _align(client, cnn, p["before"], p["after"])
    assert got.functions and all(f.change == "unchanged" for f in got.functions)
    assert got.unchanged == len(got.functions)


async def test_documents_of_different_stages_are_not_aligned(client, cnn):
    docs = [d.path for d in cnn.documents]
    last_relax = [d for d in docs if d.endswith(".relax")][-1]
    first_tir = next(d for d in docs if d.endswith(".tir"))
    code = next(d for d in docs if d.startswith("code/"))
    assert await _align(client, cnn, last_relax, first_tir) is None  # Relax → TIR: whole documents
    assert await _align(client, cnn, first_tir, code) is None
    assert await _align(client, cnn, "model.tflgraph", last_relax) is None


@pytest.mark.parametrize(
    "before, after, expected",
    [
        ("relax/999-NoSuchPass.relax", "relax/007-FuseOps.relax", "999-NoSuchPass.relax"),
        ("relax/007-FuseOps.relax", "/nowhere/x.relax", "/nowhere/x.relax"),
    ],
)
async def test_a_document_of_no_loaded_bundle_is_one_error_naming_it(client, cnn, before, after, expected):
    params = {
        "before": before if before.startswith("/") else uri(cnn.root / before),
        "after": after if after.startswith("/") else uri(cnn.root / after),
    }
    if params["after"].startswith("/"):
        params["after"] = "file://" + params["after"]
    with pytest.raises(JsonRpcException) as err:
        await client.protocol.send_request_async(METHOD, params)
    assert err.value.code == -32803
    assert expected in str(err.value) and "Traceback" not in str(err.value)


async def test_documents_of_two_bundles_are_one_error(client, cnn, int8):
    p = _pass(cnn, "FuseOps")
    params = {"before": uri(cnn.root / p["before"]), "after": uri(int8.root / p["after"])}
    with pytest.raises(JsonRpcException) as err:
        await client.protocol.send_request_async(METHOD, params)
    assert err.value.code == -32803 and "two bundles" in str(err.value)


async def test_params_without_a_document_are_one_error_not_a_hang(client, cnn):
    # ``after`` missing: InvalidParams from the protocol, answered at once.
    with pytest.raises(JsonRpcException) as err:
        await asyncio.wait_for(send_raw(client, METHOD, {"before": uri(cnn.root / "relax/007-FuseOps.relax")}), 30)
    assert err.value.code == -32602
    with pytest.raises(JsonRpcException) as err:
        await asyncio.wait_for(send_raw(client, METHOD, {"before": "", "after": ""}), 30)
    assert err.value.code == -32803 and "'before' and 'after'" in str(err.value)

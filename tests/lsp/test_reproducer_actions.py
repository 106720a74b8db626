"""Extract Reproducer as a standard code action (``textDocument/codeAction`` +
``workspace/executeCommand`` + ``window/showDocument``), and the comparison requests, against
the real server process and real bundles."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
import pytest_lsp
from lsprotocol import types
from pygls.exceptions import JsonRpcException, JsonRpcInvalidParams
from pytest_lsp import LanguageClient

from tvm_explorer.bundle.reader import Bundle
from tvm_explorer.lsp.protocol import RequestFailed

from .conftest import SERVER, position_of, send_raw, uri, wait_for_bundles


@pytest_lsp.fixture(config=SERVER, scope="module")
async def client(lsp_client: LanguageClient, real_workspace):
    folder = real_workspace["folder"]
    await lsp_client.initialize_session(
        types.InitializeParams(
            capabilities=types.ClientCapabilities(
                window=types.WindowClientCapabilities(show_document=types.ShowDocumentClientCapabilities(support=True))
            ),
            workspace_folders=[types.WorkspaceFolder(uri=uri(folder), name=folder.name)],
            initialization_options={"pollInterval": 0.2},
        )
    )
    await wait_for_bundles(lsp_client, len(real_workspace["bundles"]))
    yield
    await lsp_client.shutdown_session()


def _bundle(real_workspace, name="small_cnn_fp32") -> Bundle:
    return Bundle(real_workspace["bundles"][name])


async def _actions(client, bundle: Bundle, path: str, needle: str, delta: int = 0, occurrence: int = 0):
    """The code actions at ``needle``, as the raw JSON a client receives (lsprotocol's own
    client-side parsing takes any CodeAction carrying a command for a bare Command)."""
    text = bundle.text(path)
    at = position_of(text, needle, occurrence, delta)
    params = {
        "textDocument": {"uri": uri(bundle.root / path)},
        "range": {
            "start": {"line": at.line, "character": at.character},
            "end": {"line": at.line, "character": at.character},
        },
        "context": {"diagnostics": []},
    }
    proto = client.protocol
    saved = proto.get_result_type
    proto.get_result_type = lambda method: None  # keep the answer as JSON
    try:
        got = await send_raw(client, types.TEXT_DOCUMENT_CODE_ACTION, params)
    finally:
        proto.get_result_type = saved
    return [_Action(a) for a in got]


class _Action:
    def __init__(self, raw):
        raw = raw if isinstance(raw, dict) else proto_dict(raw)
        self.title = raw["title"]
        self.kind = raw.get("kind")
        self.command = types.Command(
            title=raw["command"]["title"], command=raw["command"]["command"], arguments=raw["command"]["arguments"]
        )


def proto_dict(obj):
    """JSON-like data from what pygls made of an untyped answer (named tuples)."""
    if hasattr(obj, "_asdict"):
        return {k: proto_dict(v) for k, v in obj._asdict().items()}
    if isinstance(obj, (list, tuple)):
        return [proto_dict(v) for v in obj]
    if isinstance(obj, dict):
        return {k: proto_dict(v) for k, v in obj.items()}
    return obj


@pytest.mark.asyncio(loop_scope="module")
async def test_code_action_on_primfunc_layer_and_kernel(client: LanguageClient, real_workspace):
    cnn = _bundle(real_workspace)
    tir = next(d.path for d in cnn.documents if d.stage == "tir")
    pass_index = cnn.document(tir).pass_index
    actions = await _actions(client, cnn, tir, "def fused_conv2d_add_relu(", 4)
    assert [a.title for a in actions] == [f"Extract Reproducer: fused_conv2d_add_relu (as after pass {pass_index})"]
    action = actions[0]
    assert action.kind == types.CodeActionKind.RefactorExtract
    assert action.command.command == "tvmExplorer.extractReproducer"
    assert action.command.arguments[0]["name"] == "fused_conv2d_add_relu"
    assert action.command.arguments[0]["pass"] == pass_index

    actions = await _actions(client, cnn, "model.tflgraph", "CONV_2D")
    assert [a.title for a in actions] == ["Extract Reproducer: kernels of op 0 CONV_2D small_cnn_1/conv2d_1"]
    assert actions[0].command.arguments[0]["layer"] == 0

    actions = await _actions(
        client, cnn, "code/module.c", "int32_t __tvm_ffi_max_pool2d1(", 2, occurrence=1
    )  # the definition, not the declaration
    assert [a.title for a in actions] == ["Extract Reproducer: max_pool2d1"]

    cuda = _bundle(real_workspace, "small_cnn_fp32_cuda")
    actions = await _actions(client, cuda, "code/device.cu", "softmax_kernel(", 2, occurrence=1)
    assert [a.title for a in actions] == ["Extract Reproducer: softmax_kernel"]


@pytest.mark.asyncio(loop_scope="module")
async def test_command_writes_next_to_bundle_and_shows_it(client: LanguageClient, real_workspace):
    cnn = _bundle(real_workspace, "small_cnn_int8")
    actions = await _actions(client, cnn, "model.tflgraph", "MAX_POOL_2D")
    command = actions[0].command
    client.shown_documents.clear()
    result = await client.workspace_execute_command_async(
        types.ExecuteCommandParams(command=command.command, arguments=command.arguments)
    )
    out = Path(result["path"])
    assert out.parent == cnn.root.parent and out.name == "small_cnn_int8.layer1.repro.py"
    text = out.read_text()
    assert text.startswith("# Reproducer: kernels of op 1 MAX_POOL_2D")
    assert "@I.ir_module\nclass Kernels:" in text and "tvm_explorer" not in text.split("# Run:")[1]
    for _ in range(50):
        if client.shown_documents:
            break
        await asyncio.sleep(0.1)
    assert [d.uri for d in client.shown_documents] == [result["uri"]]
    assert client.shown_documents[0].take_focus is True
    # bad arguments: one message, no traceback, nothing written
    bad = await client.workspace_execute_command_async(
        types.ExecuteCommandParams(
            command=command.command, arguments=[{"bundle": str(cnn.root), "name": "fused_softmax_quant"}]
        )
    )
    assert "fused_softmax_quant: no PrimFunc" in bad["error"]
    assert "closest: fused_softmax_quantize4" in bad["error"]
    outside = await client.workspace_execute_command_async(
        types.ExecuteCommandParams(command=command.command, arguments=[{"bundle": "/tmp", "name": "softmax"}])
    )
    assert "not a bundle loaded by the language server" in outside["error"]


@pytest.mark.asyncio(loop_scope="module")
async def test_compare_requests(client: LanguageClient, real_workspace):
    a = uri(real_workspace["bundles"]["small_cnn_fp32"])
    b = uri(real_workspace["bundles"]["small_cnn_fp32_cuda"])
    request = client.protocol.send_request_async

    async def ask(method, params):
        return proto_dict(await request(method, params))

    got = await ask("tvmExplorer/compareBundles", {"a": a, "b": b})
    assert got["matched_by"] == "sha256"
    assert len(got["layers"]) == 8 and all(row["changed"] for row in got["layers"])
    side_a = await ask("tvmExplorer/compareLayerCode", {"a": a, "b": b, "subgraph": 0, "op_index": 0, "side": "a"})
    side_b = await ask("tvmExplorer/compareLayerCode", {"a": a, "b": b, "subgraph": 0, "op_index": 0, "side": "b"})
    assert "fused_conv2d_add_relu" in side_a["text"] and side_a["language"] == "c"
    assert "fused_conv2d_add_relu_kernel" in side_b["text"] and side_b["language"] == "cuda-cpp"
    # The layer's own computing lines (loops and stores), as many as the lens counts: the
    # diff opens on the conv's loops, not on the function's FFI argument checks.
    for side, row in ((side_a, got["layers"][0]["a"]), (side_b, got["layers"][0]["b"])):
        lines = side["text"].split("\n")
        assert lines[0].startswith("// ---- code/")
        assert lines[1].lstrip().startswith("for (") or "conv2d_nhwc" in lines[1], lines[1]
        assert not any(w in side["text"] for w in ("num_args", "TVMFFIErrorSetRaised", "type_index"))
        assert len([x for x in lines[1:] if x.strip()]) == row["code_lines"]
    # the bundles as the comparison names them (paths) work as well as URIs
    again = await ask(
        "tvmExplorer/compareLayerCode", {"a": got["a"], "b": got["b"], "subgraph": 0, "op_index": 0, "side": "b"}
    )
    assert again["text"] == side_b["text"]
    # Failures are LSP errors (RequestFailed, the message the extension shows), not results.
    with pytest.raises(JsonRpcException) as unrelated:
        await ask("tvmExplorer/compareBundles", {"a": a, "b": uri(Path("/tmp"))})
    assert unrelated.value.code == RequestFailed.CODE and "not a bundle" in unrelated.value.message
    with pytest.raises(JsonRpcException) as no_layer:
        await ask("tvmExplorer/compareLayerCode", {"a": a, "b": b, "subgraph": 0, "op_index": 999, "side": "a"})
    assert no_layer.value.code == RequestFailed.CODE and "op 0:999" in no_layer.value.message
    with pytest.raises(JsonRpcException) as bad_side:
        await ask("tvmExplorer/compareLayerCode", {"a": a, "b": b, "subgraph": 0, "op_index": 0, "side": "c"})
    assert bad_side.value.code == JsonRpcInvalidParams.CODE

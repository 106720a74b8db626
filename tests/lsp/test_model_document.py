"""``tvmExplorer/modelDocument`` (the VS Code .tflite viewer asks it) and the server's log in
the editor (``window/logMessage``), against the real server process and real models."""

from __future__ import annotations

import shutil

import pytest
import pytest_lsp
from pygls.exceptions import JsonRpcException
from pytest_lsp import LanguageClient

from tvm_explorer.bundle.reader import Bundle

from .conftest import MODELS_DIR, SERVER, start_session, uri


@pytest.fixture(scope="module")
def workspace(real_workspace, tmp_path_factory):
    """The compiled bundles, plus loose .tflite files (a real one, a damaged one)."""
    folder = real_workspace["folder"]
    models = folder / "models"
    models.mkdir(exist_ok=True)
    shutil.copy(MODELS_DIR / "small_cnn_fp32.tflite", models / "small_cnn_fp32.tflite")
    shutil.copy(MODELS_DIR / "mobilenet_v3_small_int8.tflite", models / "mobilenet_v3_small_int8.tflite")
    data = (MODELS_DIR / "small_cnn_fp32.tflite").read_bytes()
    (models / "truncated.tflite").write_bytes(data[: len(data) // 3])
    (models / "notes.tflite").write_text("not a model\n")
    return real_workspace


@pytest_lsp.fixture(config=SERVER, scope="module")
async def client(lsp_client: LanguageClient, workspace):
    await start_session(lsp_client, workspace["folder"], expect=len(workspace["bundles"]))
    yield
    await lsp_client.shutdown_session()


async def model_document(client: LanguageClient, path) -> str:
    result = await client.protocol.send_request_async("tvmExplorer/modelDocument", {"uri": uri(path)})
    return result.text


async def test_model_document_of_a_tflite_is_the_bundles_model_document(client, workspace):
    bundle = Bundle(workspace["bundles"]["small_cnn_fp32"])
    text = await model_document(client, workspace["folder"] / "models" / "small_cnn_fp32.tflite")
    # The compile wrote its model document from the same file: the viewer shows that text.
    assert text == bundle.text("model.tflgraph")
    ops = bundle.manifest["model"]["operators"]
    assert sum(1 for line in text.splitlines() if line.startswith("op ")) == ops
    assert "op 0 CONV_2D" in text


async def test_model_document_of_a_quantized_model(client, workspace):
    text = await model_document(client, workspace["folder"] / "models" / "mobilenet_v3_small_int8.tflite")
    assert text.startswith("# TFLite model mobilenet_v3_small_int8.tflite")
    assert " quantized" in text and "op 0 " in text


@pytest.mark.parametrize("name,expected", [
    ("truncated.tflite", "truncated.tflite"),
    ("notes.tflite", "not a TFLite model"),
    ("missing.tflite", "no such file"),
])
async def test_a_bad_model_is_one_error_naming_the_file(client, workspace, name, expected):
    path = workspace["folder"] / "models" / name
    with pytest.raises(JsonRpcException) as err:
        await model_document(client, path)
    message = str(err.value)
    assert name in message and expected in message
    assert "Traceback" not in message
    assert err.value.code == -32803


async def test_every_loaded_bundle_is_logged_with_documents_and_time(client, workspace):
    logged = [m.message for m in client.log_messages]
    for name, root in workspace["bundles"].items():
        n_docs = len(Bundle(root).documents)
        lines = [m for m in logged if m.startswith(f"loaded bundle {root}:")]
        assert lines, (name, logged)
        assert f": {n_docs} documents in " in lines[0] and lines[0].endswith(" ms")
    assert not any("Cancel notification" in m for m in logged)

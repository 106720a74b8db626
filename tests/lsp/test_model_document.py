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
    shutil.copy(MODELS_DIR / "light_squeezenet.onnx", models / "light_squeezenet.onnx")
    (models / "notes.onnx").write_text("not a model\n")
    (models / "notes.pt2").write_text("not a model\n")
    return real_workspace


@pytest.fixture(scope="module")
def pt2_files(workspace):
    """The residual test net saved by torch.export.save, and a copy whose sample-inputs pickle
    creates a file when unpickled (torch.export.load does: it retries with weights_only=False)."""
    torch = pytest.importorskip("torch")
    import sys
    import zipfile

    sys.path.insert(0, str(MODELS_DIR.parent))
    from frontends import torch_nets

    models = workspace["folder"] / "models"
    ep, _args = torch_nets.resnet_program()
    good = models / "resnet.pt2"
    torch.export.save(ep, good)
    marker = models / "UNPICKLED"
    hostile = models / "hostile.pt2"

    class Plant:
        def __reduce__(self):
            return (open, (str(marker), "w"))

    import pickle

    with zipfile.ZipFile(good) as src, zipfile.ZipFile(hostile, "w") as dst:
        for info in src.infolist():
            data = src.read(info)
            if info.filename.endswith(".pt"):
                data = pickle.dumps(Plant())
            dst.writestr(info.filename.replace("resnet/", "hostile/", 1), data)
    return {"good": good, "hostile": hostile, "marker": marker}


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


async def test_model_document_of_an_onnx_model(client, workspace):
    text = await model_document(client, workspace["folder"] / "models" / "light_squeezenet.onnx")
    assert text.startswith("# ONNX model light_squeezenet.onnx\n")
    assert '\ngraph "squeezenet_old"\n' in text
    assert "float32[1,3,224,224]" in text
    assert sum(1 for line in text.splitlines() if line.startswith("  node ")) == 105
    assert any(
        line.startswith("  node ") and " Conv " in line and "kernel_shape=[3,3]" in line for line in text.splitlines()
    )


async def test_model_document_of_a_pt2_reads_its_graph_json(client, pt2_files):
    text = await model_document(client, pt2_files["good"])
    assert text.startswith("# PyTorch ExportedProgram resnet.pt2\n")
    assert "\nmodule block1.conv1 (Conv2d)\n" in text and "\nmodule head (Linear)\n" in text
    assert "node 1 aten.conv2d.default block1.conv1/conv2d_1  stride=[1,1] padding=[1,1]" in text
    assert "input  x       float32[1,3,8,8]" in text
    assert "frontends/torch_nets.py:21" in text and "weights not loaded" in text


async def test_a_pt2_is_shown_without_unpickling_anything(client, pt2_files):
    # Loading it with torch would create the file: the graph shows, and no file appears.
    text = await model_document(client, pt2_files["hostile"])
    assert "node 0 aten.conv2d.default stem/conv2d" in text
    assert not pt2_files["marker"].exists()


@pytest.mark.parametrize(
    "name,expected",
    [
        ("truncated.tflite", "truncated.tflite"),
        ("notes.tflite", "not a TFLite model"),
        ("missing.tflite", "no such file"),
        ("notes.onnx", "not an ONNX model"),
        ("notes.pt2", "not a zip archive"),
        ("missing.pt2", "no such file"),
    ],
)
async def test_a_bad_model_is_one_error_naming_the_file(client, workspace, name, expected):
    path = workspace["folder"] / "models" / name
    with pytest.raises(JsonRpcException) as err:
        await model_document(client, path)
    message = str(err.value)
    assert name in message and expected in message
    assert "Traceback" not in message
    assert err.value.code == -32803


async def test_model_kinds_are_the_frontends(client):
    """``tvmExplorer/modelKinds``: what the extension asks instead of deciding from suffixes
    (Reduce Model cuts .tflite and .onnx, not .pt2)."""
    got = await client.protocol.send_request_async("tvmExplorer/modelKinds", {})
    kinds = {k.suffix: (k.kind, k.unit, k.reducible) for k in got.kinds}
    assert kinds[".tflite"] == ("tflite", "op", True) and kinds[".onnx"] == ("onnx", "node", True)
    assert kinds[".pt2"] == ("torch", "node", False)


async def test_every_loaded_bundle_is_logged_with_documents_and_time(client, workspace):
    logged = [m.message for m in client.log_messages]
    for name, root in workspace["bundles"].items():
        n_docs = len(Bundle(root).documents)
        lines = [m for m in logged if m.startswith(f"loaded bundle {root}:")]
        assert lines, (name, logged)
        assert f": {n_docs} documents in " in lines[0] and lines[0].endswith(" ms")
    assert not any("Cancel notification" in m for m in logged)

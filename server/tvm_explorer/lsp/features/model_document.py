"""``tvmExplorer/modelDocument``: the model document of any ``.tflite``, ``.onnx`` or ``.pt2`` file (the VS Code
extension shows it read-only in place of the binary-file page)."""

from __future__ import annotations

import asyncio
from pathlib import Path

from pygls.uris import to_fs_path

from tvm_explorer.errors import ExplorerError
from tvm_explorer.frontends.preview import model_document_text
from tvm_explorer.lsp.protocol import (
    ModelDocumentParams,
    ModelDocumentResult,
    ModelKindInfo,
    ModelKindsResult,
    RequestFailed,
)
from tvm_explorer.lsp.shared import uri_to_path


def model_kinds() -> ModelKindsResult:
    """The model kinds the compiler reads (``frontends.FRONTENDS``), for the editor to decide
    nothing from file suffixes of its own."""
    from tvm_explorer.frontends import FRONTENDS  # when asked: the frontends' tables only, no TVM

    return ModelKindsResult([ModelKindInfo(f.kind, f.suffix, f.unit, f.subgraph_writer is not None) for f in FRONTENDS])


class ModelDocument:
    """Renders model files on request (off the event loop: big models take a while)."""

    async def model_document(self, params: ModelDocumentParams | None) -> ModelDocumentResult:
        """The text, or a RequestFailed error whose message names the file."""
        uri = params.uri if params else None
        path = uri_to_path(uri) if uri else None
        if uri is None or path is None:
            raise RequestFailed(f"{uri!r}: not a file URI of a model")
        fs_path = to_fs_path(uri)
        assert fs_path  # uri_to_path made a path of it
        shown = Path(fs_path)  # as the editor named it (messages), not resolved
        try:
            text = await asyncio.to_thread(model_document_text, shown)
        except ExplorerError as err:
            raise RequestFailed(str(err)) from None
        return ModelDocumentResult(text)

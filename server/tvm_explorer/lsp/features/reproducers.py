"""``textDocument/codeAction`` "Extract Reproducer" and the command that runs it: the script
is written next to the bundle and shown with ``window/showDocument`` (any LSP client)."""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path

from lsprotocol import types
from pygls.uris import from_fs_path

from tvm_explorer.errors import ExplorerError
from tvm_explorer.lsp.protocol import EXTRACT_REPRODUCER_COMMAND
from tvm_explorer.lsp.shared import Feature, uri_to_path
from tvm_explorer.reproducers.at_position import request_at

logger = logging.getLogger(__name__)


class Reproducers(Feature):
    """Code actions on PrimFuncs, kernels, Relax functions and model layers."""

    def code_actions(self, params: types.CodeActionParams) -> list[types.CodeAction]:
        """One "Extract Reproducer" action for what is at the start of the range."""
        q = self.session.query(params.text_document.uri, params.range.start)
        if q is None:
            return []
        request = request_at(q.view.bundle, q.path, q.offset)
        if request is None:
            return []
        spec = {"bundle": str(q.view.root), **request.to_json()}
        command = types.Command(title=request.title, command=EXTRACT_REPRODUCER_COMMAND, arguments=[spec])
        return [types.CodeAction(request.title, kind=types.CodeActionKind.RefactorExtract, command=command)]

    async def execute(self, server, spec) -> dict:
        """Write the reproducer of ``spec`` (a code action's argument) next to its bundle and
        ask the client to show it. Answers ``{"path", "uri", "kernels"}`` or ``{"error"}``."""
        from tvm_explorer.reproducers.extract import default_output, extract, write

        try:
            root = self._loaded_root(spec)
            name, layer = spec.get("name"), spec.get("layer")
            subgraph, pass_index = spec.get("subgraph") or 0, spec.get("pass")
            if not (isinstance(name, str) or isinstance(layer, int)):
                raise ExplorerError("Extract Reproducer: no kernel, function or layer given")

            def run():
                repro = extract(
                    root, name if layer is None else None, layer=layer, subgraph=int(subgraph), pass_index=pass_index
                )
                return repro, write(repro, default_output(root, repro))

            repro, out = await asyncio.to_thread(run)
        except (ExplorerError, TypeError, ValueError, AttributeError) as err:
            message = f"TVM Explorer: {err}"
            server.window_show_message(types.ShowMessageParams(type=types.MessageType.Error, message=message))
            return {"error": str(err)}
        uri = from_fs_path(str(out)) or ""
        caps = server.client_capabilities
        if caps and caps.window and caps.window.show_document and caps.window.show_document.support:
            try:
                await server.window_show_document_async(types.ShowDocumentParams(uri=uri, take_focus=True))
            except Exception:  # noqa: BLE001 - the client declined: the answer still names the file
                logger.warning("showDocument %s failed", uri)
        return {"path": str(out), "uri": uri, "kernels": list(repro.kernels)}

    def _loaded_root(self, spec) -> Path:
        """The bundle of the request: only one the server has loaded (from the workspace)."""
        if not isinstance(spec, dict) or not isinstance(spec.get("bundle"), str):
            raise ExplorerError("Extract Reproducer: the request names no bundle")
        raw = spec["bundle"]
        path = uri_to_path(raw) if raw.startswith("file:") else Path(raw).resolve()
        if path is None or path not in self.session.registry.bundles:
            raise ExplorerError(f"{raw}: not a bundle loaded by the language server")
        return path

"""A tuned loop through the real language server: its document link opens the MetaSchedule
trace at the step that made it, and the hover there quotes that step."""

from __future__ import annotations

import re
import shutil

import pytest
from lsprotocol import types
from tests.lsp.conftest import workspace_client
from tests.lsp.real import pos, td

from tvm_explorer.bundle.reader import Bundle


@pytest.fixture(scope="module")
def workspace(tuned, tmp_path_factory):
    folder = tmp_path_factory.mktemp("tuning-ws")
    shutil.copytree(tuned.bundle, folder / "mlp.bundle")
    return folder


client = workspace_client()


async def test_a_tuned_loop_links_to_the_trace_step_that_made_it(client, workspace):
    bundle = Bundle(workspace / "mlp.bundle")
    applied = next(p for p in bundle.manifest["passes"] if p["name"] == "MetaScheduleApplyDatabase")
    path = applied["after"]
    links = await client.text_document_document_link_async(types.DocumentLinkParams(td(bundle, path)))
    stepped = [link for link in links if "/traces/" in link.target and "#L" in link.target]
    assert {link.target.rsplit("/traces/", 1)[1].split("#")[0] for link in stepped} == {
        "fused_matmul_relu.py",
        "matmul1.py",
    }
    text = bundle.text(path)
    lines = text.split("\n")
    for link in stepped:
        file, line_col = link.target.split("#L")
        line, _ = map(int, line_col.split(","))
        trace_line = (bundle.root / "traces" / file.rsplit("/traces/", 1)[1]).read_text().split("\n")[line - 1]
        offset = sum(len(x) + 1 for x in lines[: link.range.start.line]) + link.range.start.character
        hover = await client.text_document_hover_async(types.HoverParams(td(bundle, path), pos(text, offset)))
        step = re.search(
            r"created by schedule step \d+ of `\w+` in `[^`]+`, tuned by MetaSchedule: `(.*)` *$",  # (a line break: the tuning ledger's line follows)
            hover.contents.value,
            re.M,
        )
        assert step and trace_line.strip() == step.group(1).replace("\\", ""), hover.contents.value

"""What ``reduce`` writes from a model's strings and TVM's messages is inert: the repro script
runs only what tvm-explorer wrote, and the report renders no link, image or HTML of the model's
(docs/reliability.md, "What runs"; issue 26's rules for every generated script)."""

from __future__ import annotations

import ast
from types import SimpleNamespace

import pytest
from tests.markdown_html import render_markdown

from tvm_explorer.reduce import outputs
from tvm_explorer.reduce.runner import Outcome

# A message or an operator name of the model's: each tries to end its comment, its string,
# its code block or its table cell and become code or markup.
HOSTILE = [
    "bad\nimport os; os.system('touch PWNED')",
    'x"""\nos.system("touch PWNED")\n"""',
    "\r\nexec('print(1)')  # \u2028 next",
    "```\n[click](command:workbench.action.terminal.new)\n```",
    "a | b | ![img](https://example.invalid/p.png) <img src=x onerror=alert(1)>",
    "`` <script>alert(1)</script> ``",
    "lone \ud800 surrogate",
    "C:\\Nope\\x0 \\N{no such name}",  # escapes that end a Python string literal's parse
]


def _failure(message: str) -> Outcome:
    return Outcome("error", stage="compile", error_class="TVMError", message=message, pass_name="FuseOps")


@pytest.mark.parametrize("message", HOSTILE)
def test_the_repro_script_runs_only_what_tvm_explorer_wrote(message):
    script = outputs.repro(
        small="/tmp/m.reduced.onnx",
        stock_import="mod = None",
        original=_failure(message),
        target="c",
        pipeline="my_pipes.py:faulty",
    )
    script.encode("utf-8")  # writable: no lone surrogate left
    tree = ast.parse(script)
    called = {ast.unparse(node.func) for node in ast.walk(tree) if isinstance(node, ast.Call)}
    assert "os.system" not in called and "exec" not in called
    # every line of the failure is a comment
    assert all(line.startswith("#") for line in script.splitlines()[:6]), script


def _report(message: str, name: str) -> str:
    op = SimpleNamespace(index=3, opcode=name, name=name)
    return outputs.report(
        model=f"/tmp/{name}.onnx",
        small="/tmp/small.onnx",
        ops=[op],
        kept=[3],
        original=_failure(message),
        reduced=_failure(message),
        probes=2,
        seconds=1.0,
        jobs=2,
        minimal=True,
        why="",
        partial=False,
        target="c",
        pipeline=None,
        unit="node",
    )


def test_the_report_renders_no_markup_of_the_model():
    reports = [_report(text, text) for text in HOSTILE]
    for text, html in zip(HOSTILE, render_markdown(reports)):
        for markup in ("<a ", "<img", "<script"):
            assert markup not in html, (text, html)
        # the failure stays whole inside its code block: one block for each of the two runs
        assert html.count("<pre><code>") == 3, (text, html)

"""Markdown as a strict renderer shows it: markdown-it with raw HTML and autolinks on (stricter
than VS Code, which allows neither in hovers), run by node from the repository's node_modules."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

MARKDOWN_IT = Path(__file__).resolve().parents[1] / "node_modules" / "markdown-it"
_SCRIPT = (
    "const md = require(process.argv[1])({html: true, linkify: true});"
    "const texts = JSON.parse(require('fs').readFileSync(0, 'utf8'));"
    "console.log(JSON.stringify(texts.map(t => md.render(t))));"
)


def render_markdown(markdown_texts: list[str]) -> list[str]:
    """The HTML of each Markdown text; skips the test where node or markdown-it is missing."""
    if not shutil.which("node") or not MARKDOWN_IT.exists():
        pytest.skip("node or markdown-it not installed")
    got = subprocess.run(
        ["node", "-e", _SCRIPT, str(MARKDOWN_IT)],
        input=json.dumps(markdown_texts),
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )
    return json.loads(got.stdout)

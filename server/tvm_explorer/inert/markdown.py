"""Untrusted text made safe to put into Markdown (hovers, reports, anything else rendered).

A bundle is untrusted input: an opcode such as ``[x](command:workbench.action...)`` or
``![](https://host/pixel.png)`` came back from a hover as a command link and a remote image.
Every string taken from a bundle (index.json, costs.json, numerics.json, bisect.json) goes
through ``text`` (prose) or ``code`` (an inline code span) before it becomes Markdown; only the
fixed words and the numbers of the Markdown builders are not. The extension's counterpart is
vscode-extension/src/markdown.ts (same rules).
"""

from __future__ import annotations

import re

_PUNCTUATION = re.compile(r"([\\`*_{}\[\]()<>#+\-.!|~:&\"'=$%^@;,/?])")
_LINE_BREAKS = re.compile(r"[\r\n\u2028\u2029\x0b\x0c\x85]+")
_SURROGATES = re.compile("[\ud800-\udfff]")  # lone halves (JSON's "\\ud800"): not renderable


def _one_line(value) -> str:
    return _LINE_BREAKS.sub(" ", _SURROGATES.sub("\ufffd", str(value)))


def text(value) -> str:
    """``value`` as literal Markdown text: every ASCII punctuation mark that Markdown (or an
    autolinker) could read is backslash-escaped, and line breaks become spaces, so no link,
    image, HTML, emphasis or block can start inside it."""
    return _PUNCTUATION.sub(r"\\\1", _one_line(value))


def code(value) -> str:
    """``value`` as an inline code span (nothing inside a code span is interpreted): fenced
    with one backtick more than its longest run of backticks, on one line."""
    body = _one_line(value)
    longest = max((len(run) for run in re.findall(r"`+", body)), default=0)
    fence = "`" * (longest + 1)
    if not body.strip() or body.startswith("`") or body.endswith("`"):
        body = f" {body} "
    return f"{fence}{body}{fence}"


def block(value) -> str:
    """``value`` (several lines allowed) as a fenced code block: fenced with one backtick more
    than its longest run of backticks (at least three), so nothing in it can end the block."""
    body = _SURROGATES.sub("\ufffd", str(value)).replace("\r\n", "\n")
    longest = max((len(run) for run in re.findall(r"`+", body)), default=0)
    fence = "`" * max(3, longest + 1)
    return f"{fence}\n{body}\n{fence}"


def cell(value) -> str:
    """``value`` as an inline code span in a table cell: GitHub's tables end a cell at a ``|``
    even inside a code span, so it is written ``\\|`` (which they read back as ``|``)."""
    return code(value).replace("|", "\\|")

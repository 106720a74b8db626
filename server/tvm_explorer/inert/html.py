"""Untrusted text made inert in HTML (the graph report): as element text or an attribute value
(``text``), and as JSON data inside a ``<script type="application/json">`` block (``json_block``),
where no ``</script>``, ``<!--`` or line separator can end the block or start markup."""

from __future__ import annotations

import html
import json
import re

_SURROGATES = re.compile("[\ud800-\udfff]")


def text(value) -> str:
    """``value`` as HTML text or a quoted attribute value: ``& < > " '`` escaped, lone
    surrogate halves (not encodable) replaced."""
    return html.escape(_SURROGATES.sub("\ufffd", str(value)), quote=True)


def json_block(value) -> str:
    """``value`` as JSON that is safe as the whole content of a script data block: ASCII only
    (so no U+2028 and no lone surrogate can break it), with ``<``, ``>`` and ``&`` written as
    ``\\u003c``-style escapes (``JSON.parse`` reads them back as the same characters)."""
    data = json.dumps(value, ensure_ascii=True, allow_nan=False, separators=(",", ":"))
    return data.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")

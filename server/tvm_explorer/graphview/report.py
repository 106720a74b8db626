"""``tvm-explorer report``: one self-contained HTML file — the graph app, its stylesheet, ELK's
script (a block the page does not run: the app starts its layout worker from its text), the
graph document and the report's sections inlined, under a Content-Security-Policy that lets
only those inlined scripts and styles run and forbids every network request. Every string of
the bundle is data (an escaped JSON block, or escaped text), never markup."""

from __future__ import annotations

import base64
import hashlib
import os
from pathlib import Path
from typing import Any

from tvm_explorer.errors import ExplorerError
from tvm_explorer.graphview.document import graph_document, report_sections
from tvm_explorer.graphview.types import GraphDocument
from tvm_explorer.inert import html
from tvm_explorer.navigation.view import BundleView
from tvm_explorer.whole_files import write_whole

ASSETS = Path(__file__).with_name("assets")


def _asset(name: str) -> str:
    path = ASSETS / name
    try:
        return path.read_text(encoding="utf-8")
    except OSError:
        raise ExplorerError(
            f"{path}: the graph app is not built; run `npm run build` in the repository "
            "(scripts/setup.sh does it) and try again"
        ) from None


# Starts the layout worker from ELK's text as soon as the parser has read it, before the app's
# script is compiled; the app adopts it (elk.ts), and an error the worker meets before the app
# listens is kept on it for the app to see.
_BOOT = (
    "try{performance.mark('tvmx:worker-start');"
    "var w=new Worker(URL.createObjectURL(new Blob([document.getElementById('tvmx-elk').textContent],"
    "{type:'text/javascript'})));w.onerror=function(e){w.tvmxError=(e&&e.message)||'it could not start'};"
    "self.tvmxElkWorker=w}catch(e){}"
)


def _sha256(text: str) -> str:
    return "sha256-" + base64.b64encode(hashlib.sha256(text.encode("utf-8")).digest()).decode("ascii")


def render_report(view: BundleView) -> str:
    """The report's HTML text for a loaded bundle."""
    return render_html(graph_document(view), report_sections(view))


def render_html(doc: GraphDocument, sections: dict[str, Any]) -> str:
    """The report's HTML text for a graph document and the report's sections."""
    script, style, elk = _asset("graph.js"), _asset("graph.css"), _asset("elk.js")
    if "</script" in script.lower() or "</script" in elk.lower() or "</style" in style.lower():
        raise ExplorerError(f"{ASSETS}: the built graph app cannot be inlined (it holds a closing tag)")
    model = doc["model"]
    csp = (
        "default-src 'none'; "
        # ELK's hash too: where no worker may start, the app runs ELK's text on the page
        f"script-src '{_sha256(script)}' '{_sha256(elk)}' '{_sha256(_BOOT)}'; style-src '{_sha256(style)}'; "
        "img-src data:; worker-src blob:; base-uri 'none'; form-action 'none'"
    )
    tool = model.get("tool") or {}
    facts = " · ".join(
        part
        for part in (
            f"target {model['target']}",
            f"{len(doc['nodes'])} layers",
            f"tvm-explorer {tool.get('tvm_explorer', '?')}, TVM {tool.get('tvm', '?')}",
            f"compiled {model['created']}" if model.get("created") else "",
        )
        if part
    )
    return (
        "<!DOCTYPE html>\n"
        '<html lang="en">\n<head>\n<meta charset="utf-8">\n'
        f'<meta http-equiv="Content-Security-Policy" content="{csp}">\n'
        '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
        '<meta name="referrer" content="no-referrer">\n'
        f"<title>{html.text(model['file'] or 'model')} — TVM Explorer report</title>\n"
        f"<style>{style}</style>\n"
        "</head>\n"
        '<body class="tvmx-report">\n'
        f"<header><h1>{html.text(model['file'] or 'model')}</h1>"
        f'<div class="hint">{html.text(facts)}</div></header>\n'
        '<div id="tvmx-graph"></div>\n<div id="tvmx-report"></div>\n'
        # ELK's text, then the app, then its data: the app starts its layout worker from ELK's
        # text (the page does not compile ELK) while the browser reads the graph
        f'<script type="text/plain" id="tvmx-elk">{elk}</script>\n'
        f"<script>{_BOOT}</script>\n"
        f"<script>{script}</script>\n"
        f'<script type="application/json" id="tvmx-graph-data">{html.json_block(doc)}</script>\n'
        f'<script type="application/json" id="tvmx-report-data">{html.json_block(sections)}</script>\n'
        "</body>\n</html>\n"
    )


def write_report(view: BundleView, output: str | os.PathLike) -> Path:
    """Write the report (whole, or not at all: a temporary sibling renamed into place)."""
    out = Path(output)
    if out.is_dir():
        raise ExplorerError(f"{out}: is a directory; give the HTML file to write (-o REPORT.html)")
    return write_whole(out, render_report(view).encode("utf-8"), "report")

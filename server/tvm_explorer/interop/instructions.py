"""The README written beside the overlays: what each file shows and how to load it into
Model Explorer (its command line and its UI)."""

from __future__ import annotations

import shlex

from tvm_explorer.bundle.types import Layer
from tvm_explorer.inert import markdown as md
from tvm_explorer.interop.model_explorer import Overlay, Overlays

MAX_LISTED = 20  # layers without a node named in the README; the rest counted


def readme_text(
    bundle_path: str,
    model_file: str,
    adapter: str,
    extension: str,
    extension_module: str,
    overlays: Overlays,
) -> str:
    """The README of an overlays folder (Markdown; the bundle's own strings made inert)."""
    files = [o.file for o in overlays.written]
    paths = ",".join(f"DIR/{name}" for name in files)
    ext = f" --extensions={extension_module}" if extension_module else ""
    command = f"model-explorer {shlex.quote(model_file)}{ext} --node_data_paths={paths}"
    out = [
        "# TVM Explorer overlays for Model Explorer",
        "",
        f"Per-node figures of the bundle {md.code(bundle_path)} (model {md.code(model_file)}), as Model Explorer "
        "node data. Open the ORIGINAL model file in Model Explorer and add these files: each colors "
        f"the nodes it has a figure for. The node ids are those of {adapter}.",
        "",
        "| file | what the numbers are |",
        "|---|---|",
        *(
            f"| `{o.file}` | {_about(o)} ({len(o.values)} node{'s' if len(o.values) != 1 else ''}) |"
            for o in overlays.written
        ),
        "",
        "A node without a figure (not timed, or its output hidden inside a fused kernel) is left out, "
        "not written as zero.",
        "",
        "## Load them",
        "",
        "From the command line (`pip install ai-edge-model-explorer`"
        + (f" `{extension}`" if extension else "")
        + "; DIR is this folder):",
        "",
        md.block(command),
        "",
        "In the browser: open the model, click **Add per-node data** (above the graph), then "
        "**Load json data file** / **From computer** and pick one or more of the `.json` files; "
        "select one to color the graph with it. The side panel lists each node's value and a "
        "summary per layer group.",
        "",
        "From Python (`model_explorer.visualize_from_config`): "
        "`config().add_model_from_path(MODEL).add_node_data_from_path(FILE)`.",
    ]
    if overlays.skipped:
        out += ["", "## Not written", ""]
        out += [f"- `{s.file}`: {md.text(s.reason)}" for s in overlays.skipped]
    if overlays.unkeyed:
        out += ["", "## Layers Model Explorer shows no node for", ""]
        out += [f"- {_layer(lay)}" for lay in overlays.unkeyed[:MAX_LISTED]]
        if len(overlays.unkeyed) > MAX_LISTED:
            out.append(f"- and {len(overlays.unkeyed) - MAX_LISTED} more")
    return "\n".join(out) + "\n"


def _layer(lay: Layer) -> str:
    name = f" {md.code(lay.name)}" if lay.name else ""
    return f"{lay.op_index} {md.text(lay.opcode)}{name}"


def _about(overlay: Overlay) -> str:
    """The overlay's line, its one string from the bundle (the reference) as a code span."""
    if not overlay.reference:
        return overlay.about
    return overlay.about.replace(overlay.reference, md.cell(overlay.reference))

"""Command-line glue: ``compile --numerics`` options and the ``tvm-explorer numerics`` query."""

from __future__ import annotations

import json

from tvm_explorer.bundle.sections.numerics import (
    NUMERICS_FILE,
    NumericsDocument,
    budget_lines,
    format_error,
    headline,
    unit,
)
from tvm_explorer.cli.options import add_bundle_query, add_reference_option, fail
from tvm_explorer.errors import ExplorerError
from tvm_explorer.tablenames import NameColumn


def add_compile_options(parser) -> None:
    """The ``--numerics`` family of ``tvm-explorer compile``."""
    parser.add_argument(
        "--numerics",
        action="store_true",
        help="run the compiled model and the reference (LiteRT for .tflite, onnxruntime "
        "for .onnx, eager PyTorch for .pt2) on the same inputs and compare "
        "every layer output (CPU targets; docs/numerics.md)",
    )
    parser.add_argument(
        "--numerics-unfused",
        action="store_true",
        help="with --numerics: also build a variant without operator fusion, "
        "to see the layers fusion hides (implies --numerics)",
    )
    add_reference_option(
        parser,
        "with --numerics: compare with this model of the same kind and graph "
        "(.tflite, .onnx or .pt2; default: the model itself)",
    )


def add_parser(sub) -> None:
    """``tvm-explorer numerics BUNDLE [--json]``."""
    add_bundle_query(
        sub, "numerics", "per layer: error against the reference (LiteRT, onnxruntime or eager PyTorch)", run_query
    )


def run_query(args) -> int:
    """Print a bundle's numerics (text table or the JSON of numerics.json)."""
    from tvm_explorer.bundle.reader import Bundle

    try:
        bundle = Bundle(args.bundle)
    except ExplorerError as err:
        return fail(str(err))
    data = bundle.numerics
    if data is None and NUMERICS_FILE in bundle.section_problems:
        return fail(f"{bundle.section_problems[NUMERICS_FILE]}")
    if data is None:
        return fail(f"{args.bundle}: no numerics recorded (compile with --numerics)")
    if args.json:
        print(json.dumps(data, indent=1))
        return 0
    for line in format_table(data):
        print(line)
    return 0


def format_table(data: NumericsDocument) -> list[str]:
    """The text report: one line per layer in graph order, the first divergence marked."""
    lines = [
        f"{data.get('model', 'model')} ({data.get('target', '?')}) against the "
        f"{data['reference']}, inputs: {data.get('inputs', '?')}; mode: {data['mode']}"
        + (f"; the model ran on {data['ran_on']}" if data.get("ran_on") else ""),
        headline(data),
        *budget_lines(data),
    ]
    first = data.get("first_divergence")
    names = NameColumn((e["name"] for e in data["layers"]), 40)
    note = names.note()
    if note:
        lines.append(note)
    lines.append(f"{'':2}{unit(data):>4}  {'opcode':22} {'name':40} {'seen in':8} error")
    for e in data["layers"]:
        is_first = first is not None and (e["subgraph"], e["op_index"]) == (first["subgraph"], first["op_index"])
        mark = "=>" if is_first else "  "
        where = f"{e['subgraph']}:" if e["subgraph"] else ""
        seen = e.get("observed_by") or "-"
        lines.append(
            f"{mark}{where + str(e['op_index']):>4}  {e['opcode'][:22]:22} {names.show(e['name']):40} "
            f"{seen:8} {format_error(e)}"
        )
    if first is None:
        lines.append("No layer diverges beyond the thresholds (docs/numerics.md).")
    else:
        e = next(x for x in data["layers"] if (x["subgraph"], x["op_index"]) == (first["subgraph"], first["op_index"]))
        lines.append(f"First divergence: {unit(data)} {e['op_index']} {e['opcode']} {e['name']}")
    fused_first = data.get("fused_first_divergence")
    if "fused_first_divergence" in data and fused_first != first:
        what = (
            "none"
            if fused_first is None
            else f"{unit(data)} {fused_first['op_index']} (subgraph {fused_first['subgraph']})"
        )
        lines.append(f"In the normal (fused) build the first divergence seen is: {what}")
    from tvm_explorer.numerics.blocks import report

    lines.extend(report(data))  # per decoder layer, for models made of repeated blocks
    return lines

"""``tvm-explorer memory BUNDLE [--json] [--at STEP]``: which layers' tensors are held at the
peak (or at a step), what would lower it, and the static figures beside a measured run."""

from __future__ import annotations

import json

from tvm_explorer.cli.options import add_bundle_query, fail, section
from tvm_explorer.errors import ExplorerError


def add_parser(sub) -> None:
    p = add_bundle_query(
        sub,
        "memory",
        "memory timeline: what is held at the peak, per layer, and what would lower it",
        run_memory,
        "the step's breakdown, advice and the whole memory.json",
    )
    p.add_argument("--at", type=int, metavar="STEP", help="show this step instead of the peak")
    p.add_argument(
        "--top", type=int, default=15, metavar="N", help="timeline rows to print, biggest first (default 15)"
    )


def _labeler(bundle, unit: str):
    """``op 3 CONV_2D conv_dw_1`` for a layer id, the scope most names share left out (the
    table says so)."""
    from tvm_explorer.tablenames import NameColumn

    layers = bundle.layers
    names = NameColumn([lay.name for lay in layers], 48)

    def label(lid: int) -> str:
        if not 0 <= lid < len(layers):
            return f"layer {lid}"
        lay = layers[lid]
        name = names.show(lay.name) if lay.name else ""
        return f"{unit} {lay.op_index} {lay.opcode}" + (f" {name}" if name else "")

    return label, names.note()


def _full(bundle, lid: int) -> str:
    lay = bundle.layers[lid] if 0 <= lid < len(bundle.layers) else None
    return f"layer {lid}" if lay is None else f"{lay.opcode} {lay.name}".strip()


def run_memory(args) -> int:
    """Print the memory report of a bundle."""
    from tvm_explorer.bundle.reader import Bundle
    from tvm_explorer.frontends import frontend_of
    from tvm_explorer.memory.table import as_json, render

    try:
        bundle = Bundle(args.bundle)
        data = section(bundle.memory(), args.bundle, "memory.json")
        steps = len(data["steps"])
        if args.at is not None and not 0 <= args.at < steps:
            raise ExplorerError(
                f"--at {args.at}: the timeline of {args.bundle} has steps 0 to {steps - 1}"
                if steps
                else f"--at {args.at}: the function of {args.bundle} calls nothing (no steps)"
            )
    except ExplorerError as err:
        return fail(str(err))
    model = bundle.manifest.get("model") or {}
    kind = model.get("kind", "tflite") if isinstance(model, dict) else "tflite"
    label, note = _labeler(bundle, frontend_of(kind).unit)
    if args.json:
        print(json.dumps(as_json(data, lambda lid: _full(bundle, lid), args.at), indent=1))
    else:
        title = str(model.get("file") or args.bundle) if isinstance(model, dict) else str(args.bundle)
        if note:
            print(note)
        print(render(data, label, args.at, max(args.top, 0), title))
    return 0

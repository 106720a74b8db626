"""``tvm-explorer origins BUNDLE FILE:LINE[:COL]``: the layers a position of a bundle
document came from; ``origins BUNDLE --kernel NAME``: the layers of a kernel a profiler names."""

from __future__ import annotations

import json

from tvm_explorer.cli.options import load_bundle
from tvm_explorer.errors import ExplorerError
from tvm_explorer.errors import fail as _fail


def add_parser(sub) -> None:
    p = sub.add_parser("origins", help="origin layers of a position in a bundle document")
    p.add_argument("bundle")
    p.add_argument("position", nargs="?", help="FILE:LINE[:COL], FILE relative to the bundle, 1-based")
    p.add_argument(
        "--kernel",
        metavar="NAME",
        help="a kernel or function name as a profiler shows it (Nsight, perf): the layers it computes",
    )
    p.add_argument("--json", action="store_true")
    p.set_defaults(run=_run_origins)


def _parse_position(text: str) -> tuple[str, int, int | None]:
    """``FILE:LINE[:COL]`` (1-based); a line or column that is a number but not a valid
    one is reported as such, not taken as part of the file name."""
    import re

    match = re.fullmatch(r"(.+?):([+-]?\d+)(?::([+-]?\d+))?", text, re.DOTALL)
    if not match:
        raise ExplorerError(f"{text!r}: expected FILE:LINE[:COL] (1-based line and column)")
    path, line, col = match.group(1), int(match.group(2)), match.group(3)
    if line < 1:
        raise ExplorerError(f"{text}: line {line} is invalid (lines start at 1)")
    if col is not None and int(col) < 1:
        raise ExplorerError(f"{text}: column {int(col)} is invalid (columns start at 1)")
    return path, line, None if col is None else int(col)


def _run_kernel(args) -> int:
    from tvm_explorer.navigation.kernel_names import find_kernel, known_kernels

    try:
        b = load_bundle(args.bundle)
        found = find_kernel(b, args.kernel)
        if not found:
            names = known_kernels(b)
            shown = ", ".join(names[:12]) + (f" and {len(names) - 12} more" if len(names) > 12 else "")
            raise ExplorerError(
                f"{args.kernel!r}: no kernel or function of that name in {args.bundle} (it has {shown})"
            )
    except ExplorerError as err:
        return _fail(str(err))
    if args.json:
        rows = [
            {
                "kernel": m.name,
                "document": m.path,
                "line": b.text(m.path).count("\n", 0, m.start) + 1,
                "origins": [o.to_json() for o in m.origins],
            }
            for m in found
        ]
        print(json.dumps({"kernel": args.kernel, "found": rows}, indent=1))
        return 0
    from tvm_explorer.navigation.sources import layer_caption

    for m in found:
        line = b.text(m.path).count("\n", 0, m.start) + 1
        print(f"{m.name}  {m.path}:{line}")
        for o in m.origins:
            role = "layer output" if o.is_output else "part of layer"
            caption = layer_caption(o.layer, full_path=True)
            print(f"  op {o.layer.op_index} {o.layer.opcode}{' ' + caption if caption else ''} ({role})")
    return 0


def _run_origins(args) -> int:
    if args.kernel:
        if args.position:
            return _fail("give either FILE:LINE[:COL] or --kernel NAME, not both")
        return _run_kernel(args)
    if not args.position:
        return _fail("origins needs FILE:LINE[:COL] (a position in a bundle document) or --kernel NAME")
    try:
        b = load_bundle(args.bundle)
        path, line, col = _parse_position(args.position)
        if b.document(path) is None:
            raise ExplorerError(f"{path}: not a document of bundle {args.bundle}")
        if line < 1:
            raise ExplorerError(f"{args.position}: lines start at 1")
        text_line = b.text(path).split("\n")[line - 1] if line <= len(b.text(path).split("\n")) else None
        if text_line is None:
            raise ExplorerError(f"{path}: line {line} is past the end of the document")
        if col is not None and col > len(text_line) + 1:
            raise ExplorerError(
                f"{args.position}: column {col} is past the end of line {line} ({len(text_line)} characters)"
            )
        column = (col - 1) if col else len(text_line) - len(text_line.lstrip())
        offset = b.offset_of(path, line - 1, column)
        origins = b.origins_at(path, offset)
    except ExplorerError as err:
        return _fail(str(err))
    if args.json:
        print(json.dumps({"origins": [o.to_json() for o in origins]}, indent=1))
        return 0
    if not origins:
        print(f"{path}:{line}: no origin recorded here")
    from tvm_explorer.inert.text import one_line
    from tvm_explorer.navigation.sources import group_caption, layer_caption, repeated_groups

    # The same layer of repeated blocks (decoder layers) is one line, its path compressed:
    # ops 61, 160 aten.mm.default model.layers.{0..1}.self_attn.q_proj (Linear) — …:243
    for group in repeated_groups(origins):
        o, compressed = group[0]
        role = "layer output" if o.is_output else "part of layer"
        where = f"subgraph {o.layer.subgraph} " if o.layer.subgraph else ""
        caption = group_caption(o.layer, compressed, full_path=True) if len(group) > 1 else ""
        caption = caption or layer_caption(o.layer, full_path=True)
        caption = f" {caption}" if caption else ""
        ops = (
            "op " + str(o.layer.op_index)
            if len(group) == 1
            else "ops " + ", ".join(str(m.layer.op_index) for m, _ in group)
        )
        outputs = ", ".join(out for m, _ in group for out in m.layer.outputs)
        # the model's strings on one line, escaped: a name cannot forge a line (inert/text.py)
        print(f"{where}{ops} {one_line(o.layer.opcode)}{one_line(caption)} ({role}) -> {one_line(outputs)}")
    return 0

"""The ``extract`` subcommand."""

from __future__ import annotations

from tvm_explorer.cli.options import fail
from tvm_explorer.errors import ExplorerError


def _run_extract(args) -> int:
    from tvm_explorer.reproducers.extract import default_output, extract, write

    try:
        if args.name is None and args.layer is None:
            raise ExplorerError("extract: give a NAME (PrimFunc, kernel or Relax function) or --layer OP_INDEX")
        if args.name is not None and args.layer is not None:
            raise ExplorerError("extract: give either NAME or --layer, not both")
        repro = extract(args.bundle, args.name, layer=args.layer, subgraph=args.subgraph, pass_index=args.pass_index)
        out = write(repro, args.output or default_output(args.bundle, repro))
    except ExplorerError as err:
        return fail(str(err))
    print(f"Reproducer written: {out}")
    print(f"  kernels: {', '.join(repro.kernels)}; pass {repro.pass_index} {repro.pass_name}")
    print(f"Run it (needs only tvm and numpy):\n  python {out}")
    return 0


def add_parser(sub) -> None:
    """Register ``tvm-explorer extract``."""
    p = sub.add_parser(
        "extract",
        help="write a standalone script that rebuilds, runs, checks and times a kernel (or a layer's kernels)",
    )
    p.add_argument("bundle")
    p.add_argument("name", nargs="?", help="a PrimFunc, a generated kernel (__tvm_ffi_X, X_kernel) or a Relax function")
    p.add_argument("--layer", type=int, metavar="OP_INDEX", help="the kernels of this layer")
    p.add_argument("--subgraph", type=int, default=0, help="the layer's subgraph (default 0)")
    p.add_argument(
        "--pass",
        dest="pass_index",
        type=int,
        metavar="N",
        help="take the function as printed after pass N (default: the first TIR document it appears in)",
    )
    p.add_argument("-o", "--output", help="script to write (default: next to the bundle, BUNDLE.<name>.repro.py)")
    p.set_defaults(run=_run_extract)

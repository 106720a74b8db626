"""Command-line parts of costs: the ``--profile`` options of ``compile`` and ``profile``, and
the ``costs`` command."""

from __future__ import annotations

import argparse
import json
import sys

from tvm_explorer.app.jobs import MeasureOptions, RemoteOptions
from tvm_explorer.cli.options import add_inputs_option, fail, job_from, section
from tvm_explorer.costs.table import SORTS, as_json, render
from tvm_explorer.errors import ExplorerError


def add_profile_options(p: argparse.ArgumentParser, flag: bool = True) -> None:
    """``--profile [--repeat N] [--inputs FILE.npz]`` and where it runs, on ``compile``
    (``flag=False``: on ``profile``, which always profiles)."""
    from tvm_explorer.costs.request import DEFAULT_REPEAT

    if flag:
        p.add_argument(
            "--profile",
            action="store_true",
            help="after building, run the model and time every kernel call (llvm, c; cuda on a "
            "GPU, with CUDA events); "
            "costs per layer go to costs.json",
        )
    p.add_argument(
        "--repeat",
        type=int,
        default=DEFAULT_REPEAT,
        metavar="N",
        help=f"timed runs with --profile (default {DEFAULT_REPEAT})",
    )
    add_inputs_option(p, "model inputs for --profile and --numerics, by input name (default: seeded random values)")
    add_remote_options(p)


def add_remote_options(p: argparse.ArgumentParser) -> None:
    """Where ``--profile`` runs: here (default) or on devices through TVM's RPC."""
    from tvm_explorer.remote.request import DEFAULT_TIMEOUT

    g = p.add_argument_group("measuring on devices (TVM RPC; docs/costs.md, 'Measuring on devices')")
    g.add_argument("--rpc", metavar="HOST:PORT", help="run --profile/--numerics on the device of this RPC server")
    g.add_argument(
        "--rpc-tracker",
        metavar="HOST:PORT",
        help="run --profile/--numerics (and --tune's candidates) on devices handed out by this RPC tracker",
    )
    g.add_argument("--rpc-key", metavar="KEY", help="with --rpc-tracker: the key the devices registered with")
    g.add_argument(
        "--rpc-timeout",
        type=float,
        default=DEFAULT_TIMEOUT,
        metavar="S",
        help=f"seconds to wait for a device (default {DEFAULT_TIMEOUT:g})",
    )
    g.add_argument(
        "--devices",
        type=int,
        default=1,
        metavar="N",
        help="with --rpc-tracker: measure on N devices of the key in parallel (per layer: median and spread)",
    )
    g.add_argument(
        "--cc",
        metavar="PATH",
        help="the C (cross) compiler that links the library for the device (default: <triple>-gcc on PATH "
        "for --target 'llvm -mtriple=<triple>', else the system's)",
    )


def measure_of(args: argparse.Namespace, profile: bool, required: bool = False) -> MeasureOptions:
    """What the options of ``add_profile_options`` and ``numerics.add_compile_options`` ask to
    measure (``profile``: ``--profile`` given, or the ``profile`` command)."""
    return job_from(
        MeasureOptions,
        args,
        profile=profile,
        profile_required=required,
        numerics=bool(args.numerics or args.numerics_unfused),
        numerics_unfused=bool(args.numerics_unfused),
        remote=job_from(RemoteOptions, args),
    )


def add_parser(sub) -> None:
    """The ``costs`` command."""
    p = sub.add_parser("costs", help="per layer: measured time, code lines, workspace, kernels")
    p.add_argument("bundle")
    p.add_argument("--json", action="store_true")
    p.add_argument(
        "--sort", choices=SORTS, default="time", help="time (default; code lines when not profiled), code or memory"
    )
    p.add_argument(
        "--by",
        default="layer",
        metavar="layer|module[:DEPTH]",
        help="layer (default): one row per layer; module: costs rolled up the module tree, one row "
        "per module (module:3: per subtree at depth 3, e.g. per decoder layer model.layers.3), "
        "then the modules repeated across layers summed (model.layers.{0..31}.self_attn)",
    )
    p.set_defaults(run=run_costs)


def run_costs(args) -> int:
    """Print the costs table of a bundle."""
    from tvm_explorer.bundle.reader import Bundle
    from tvm_explorer.costs import rollup

    try:
        by, depth = rollup.parse_by(args.by)
    except ValueError as err:
        return fail(str(err))
    try:
        bundle = Bundle(args.bundle)
        costs = section(bundle.costs(), args.bundle, "costs.json")
    except ExplorerError as err:
        return fail(str(err))
    try:  # the ledger is optional: a damaged one is reported, the costs still print
        tuning = bundle.tuning()
    except ExplorerError as err:
        print(f"tvm-explorer: warning: {err}; the tuning column is left out", file=sys.stderr)
        tuning = None
    if by == "module":
        print(
            json.dumps(rollup.as_json(costs["layers"], depth), indent=1) if args.json else rollup.render(costs, depth)
        )
    elif args.json:
        print(json.dumps(as_json(costs, args.sort, bundle.sass(), tuning), indent=1))
    else:
        from tvm_explorer.frontends import frontend_of

        kind = (bundle.manifest.get("model") or {}).get("kind", "tflite")
        print(render(costs, args.sort, unit=frontend_of(kind).unit, machine=bundle.sass(), tuning=tuning))
        repeated = rollup.across_repeats(rollup.by_module(costs["layers"]))
        if repeated:
            biggest = max(repeated, key=lambda r: len(r["members"]))
            print(
                f"\n{len(repeated)} modules repeat across layers (e.g. {biggest['module']}): "
                f"tvm-explorer costs {args.bundle} --by module sums them"
            )
    return 0

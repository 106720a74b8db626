"""``tvm-explorer profile BUNDLE``: measure an existing bundle again — here, or on devices
through TVM's RPC — by rebuilding it from the model its manifest records (same target,
pipeline and options; the model's SHA-256 checked), then replacing the bundle in one atomic
swap (``--numerics`` checks it again too, on the same device). A failure leaves the bundle as
it was."""

from __future__ import annotations

import argparse
import hashlib
import os

from tvm_explorer.cli.options import (
    DEFAULT_TIMEOUT,
    add_trust_option,
    default_memory_limit,
    memory_limit_argument,
    seconds_argument,
)
from tvm_explorer.errors import ExplorerError
from tvm_explorer.errors import fail as _fail


def add_parser(sub) -> None:
    p = sub.add_parser(
        "profile",
        help="measure an existing bundle again (here, or on devices with --rpc/--rpc-tracker): "
        "rebuilds it from the model its manifest records",
    )
    p.add_argument("bundle", help="a bundle written by tvm-explorer compile")
    p.add_argument(
        "--model",
        metavar="PATH",
        help="the model the bundle was compiled from (default: the path its manifest records); "
        "it must be the same file (SHA-256 checked)",
    )
    p.add_argument(
        "--target",
        help="build for this target instead of the bundle's (e.g. 'llvm -mtriple=aarch64-linux-gnu' for a board); "
        "the bundle then documents that build",
    )
    p.add_argument("--timeout", type=seconds_argument, default=DEFAULT_TIMEOUT, metavar="SECONDS")
    p.add_argument("--memory-limit", type=memory_limit_argument, default=default_memory_limit(), metavar="GIB")
    p.add_argument("--progress", choices=("auto", "bar", "json", "none"), default="auto")
    add_trust_option(p)
    from tvm_explorer.cli.costs import add_profile_options
    from tvm_explorer.cli.numerics import add_compile_options

    add_profile_options(p, flag=False)
    add_compile_options(p)
    p.set_defaults(run=_run_profile)


def _sha256(path: str) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _compile_arguments(args) -> argparse.Namespace:
    """The ``compile`` arguments that rebuild the bundle, or ExplorerError."""
    from tvm_explorer.bundle.reader import Bundle

    manifest = Bundle(args.bundle).manifest
    model_entry = manifest.get("model") or {}
    model = args.model or model_entry.get("path")
    if not model:
        raise ExplorerError(
            f"{args.bundle}: its manifest does not record where the model is (written by an older "
            "tvm-explorer): name it with --model PATH"
        )
    if args.model and not os.path.isfile(model):
        raise ExplorerError(f"{model}: no such model file (--model)")
    if not os.path.isfile(model):
        raise ExplorerError(
            f"{model}: the model {args.bundle} was compiled from is not there any more: name it with --model PATH"
        )
    if model_entry.get("sha256") and _sha256(model) != model_entry["sha256"]:
        raise ExplorerError(
            f"{model}: not the model {args.bundle} was compiled from (its SHA-256 differs): give that "
            "model with --model, or compile this one anew (tvm-explorer compile)"
        )
    options = manifest.get("options") or {}
    return argparse.Namespace(
        model=model,
        output=args.bundle,
        target=args.target or manifest.get("target") or "c",
        exact_origins=bool(options.get("exact_origins")),
        no_schedule_records=not options.get("schedule_records", True),
        no_spans=False,
        timeout=args.timeout,
        memory_limit=args.memory_limit,
        progress=args.progress,
        pipeline=options.get("pipeline"),
        trust_pickle=args.trust_pickle,
        in_process=False,
        profile=True,
        profile_required=True,  # the bundle is replaced only with a measurement
        repeat=args.repeat,
        inputs=args.inputs,
        rpc=args.rpc,
        rpc_tracker=args.rpc_tracker,
        rpc_key=args.rpc_key,
        rpc_timeout=args.rpc_timeout,
        devices=args.devices,
        cc=args.cc,
        numerics=args.numerics or args.numerics_unfused,
        numerics_unfused=args.numerics_unfused,
        reference=args.reference,
    )


def _run_profile(args) -> int:
    try:
        compile_args = _compile_arguments(args)
    except ExplorerError as err:
        return _fail(str(err))
    from tvm_explorer.cli.compile import _run_compile

    return _run_compile(compile_args)

"""``tvm-explorer profile BUNDLE``: measure an existing bundle again — here, or on devices
through TVM's RPC — by rebuilding it from the model its manifest records (same target and
options; the model's SHA-256 checked), then replacing the bundle in one atomic swap
(``--numerics`` checks it again too, on the same device). A failure leaves the bundle as it
was.

A bundle is data someone may have handed over: nothing read from it is imported or run. A
Relax pipeline (Python code) is used only when named on the command line (``--pipeline``);
a manifest that records one is refused without it, saying what it asked for. A model the
manifest names as ``FILE.py:FACTORY`` (code too) is refused the same way (``--model``)."""

from __future__ import annotations

import argparse
import hashlib
import os
import re

from tvm_explorer.cli.options import (
    DEFAULT_TIMEOUT,
    add_pipeline_option,
    add_trust_option,
    default_memory_limit,
    memory_limit_argument,
    seconds_argument,
)
from tvm_explorer.errors import ExplorerError
from tvm_explorer.errors import fail as _fail
from tvm_explorer.frontends.nn.factory import split_factory


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
    add_pipeline_option(
        p,
        "rebuild with this Relax pipeline of yours (as for compile). Never taken from the bundle: "
        "a bundle compiled with one needs it named here (its manifest's choice is code, and a "
        "bundle is data)",
    )
    add_trust_option(p)
    from tvm_explorer.cli.costs import add_profile_options
    from tvm_explorer.cli.numerics import add_compile_options

    add_profile_options(p, flag=False)
    add_compile_options(p)
    p.set_defaults(run=_run_profile)


_SPEC = re.compile(r"(?:[A-Za-z_][\w.]*|[\w./-]+\.py):[A-Za-z_][\w.]*\Z", re.ASCII)


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
    options = manifest.get("options") or {}
    recorded = options.get("pipeline")
    if recorded and not args.pipeline:
        text = str(recorded)[:200]
        # the manifest's text is shown escaped; offered as the flag only if it is one
        allow = f"--pipeline {text}" if _SPEC.match(text) else "--pipeline MODULE:FUNCTION"
        raise ExplorerError(
            f"{args.bundle}: its manifest says it was compiled with the Relax pipeline {text!r}, Python "
            "code that profile would import and run; nothing read from a bundle is imported or run. "
            f"If you trust that code, name it yourself: {allow} (imported from the current "
            "directory or PYTHONPATH, as compile does)"
        )
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
    if not args.model and split_factory(str(model)) is not None:
        raise ExplorerError(
            f"{args.bundle}: its manifest names the model {str(model)[:200]!r}, Python code (FILE.py:FACTORY) "
            "that profile would import and run; nothing read from a bundle is run: name the model "
            "yourself with --model"
        )
    if model_entry.get("sha256") and _sha256(model) != model_entry["sha256"]:
        raise ExplorerError(
            f"{model}: not the model {args.bundle} was compiled from (its SHA-256 differs): give that "
            "model with --model, or compile this one anew (tvm-explorer compile)"
        )
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
        pipeline=args.pipeline,
        input_shape=_input_shapes(options.get("input_shapes")),
        sass=options.get("sass") if isinstance(options.get("sass"), str) else None,
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


def _input_shapes(recorded) -> list:
    """The bundle's ``--input-shape`` pins, to compile it again the same way."""
    from tvm_explorer.frontends.input_shapes import InputShape

    if not isinstance(recorded, dict):
        return []
    return [
        InputShape(str(name), tuple(int(d) for d in dims))
        for name, dims in recorded.items()
        if isinstance(dims, list) and all(isinstance(d, int) for d in dims)
    ]

"""``tvm-explorer profile BUNDLE``: measure an existing bundle again — here, or on devices
through TVM's RPC — by rebuilding it from the model its manifest records (``app/profile.py``
turns the ProfileJob of the command line into the CompileJob; same target and options; the
model's SHA-256 checked), then replacing the bundle in one atomic swap (``--numerics`` checks
it again too, on the same device). A failure leaves the bundle as it was."""

from __future__ import annotations

import argparse

from tvm_explorer.app.jobs import ProfileJob
from tvm_explorer.cli.options import (
    add_limit_options,
    add_pipeline_option,
    add_progress_option,
    add_target_option,
    add_trust_option,
    fail,
    job_from,
)
from tvm_explorer.errors import ExplorerError


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
    add_target_option(
        p,
        None,
        "build for this target instead of the bundle's (e.g. 'llvm -mtriple=aarch64-linux-gnu' for a board); "
        "the bundle then documents that build",
    )
    add_limit_options(p)
    add_progress_option(p)
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
    p.set_defaults(run=run)


def job_of(args: argparse.Namespace) -> ProfileJob:
    """The ProfileJob of ``profile``'s parsed command line."""
    from tvm_explorer.cli.costs import measure_of

    # the bundle is replaced only with a measurement
    return job_from(ProfileJob, args, measure=measure_of(args, profile=True, required=True))


def run(args: argparse.Namespace) -> int:
    """``tvm-explorer profile``: the rebuild runs as ``compile`` runs it."""
    from tvm_explorer.app.profile import rebuild_job
    from tvm_explorer.cli.compile import run_compile_job

    try:
        job = rebuild_job(job_of(args))
    except ExplorerError as err:
        return fail(str(err))
    return run_compile_job(job)

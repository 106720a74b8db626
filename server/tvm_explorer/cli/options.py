"""What several subcommands share: the options declared by more than one command
(``--timeout``, ``--memory-limit``, ``--progress``, ``--target``, ``--pipeline``, ``--inputs``,
``--reference``, ``--trust-pickle``), each declared and checked here once; turning them into
the parts of a job (``app.jobs``); the one way a command fails with a message; and loading a
bundle for a query."""

from __future__ import annotations

import argparse
import dataclasses
import os
import sys
from typing import TYPE_CHECKING, TypeVar

from tvm_explorer.app.jobs import DEFAULT_TIMEOUT, RunLimits
from tvm_explorer.errors import EXIT_ERROR, EXIT_REMOTE, EXIT_UNTRUSTED, ExplorerError, RemoteError, fail

if TYPE_CHECKING:
    from _typeshed import DataclassInstance

_Job = TypeVar("_Job", bound="DataclassInstance")
_Section = TypeVar("_Section")

__all__ = ["DEFAULT_TIMEOUT", "fail"]


def default_memory_limit() -> float:
    """GiB: three quarters of the machine's memory, at least 4."""
    try:
        total = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30
    except (ValueError, OSError, AttributeError):
        return 16.0
    return max(4.0, round(0.75 * total, 1))


def apply_memory_limit(gib: float) -> None:
    """Cap the address space of this (compile) process (see ``memlimit.apply``)."""
    from tvm_explorer.supervise import memlimit

    memlimit.apply(gib)


def apply_trust(trust_pickle: bool) -> None:
    """``--trust-pickle``: this process may run the pickles of the .pt2 files it reads."""
    from tvm_explorer.frontends.torch.safe_load import trust_pickles

    trust_pickles(trust_pickle)


def exit_code_of(err: BaseException) -> int:
    """The exit code of a failure reported as one message."""
    from tvm_explorer.frontends.torch.safe_load import PickleRefused

    if isinstance(err, RemoteError):
        return EXIT_REMOTE
    return EXIT_UNTRUSTED if isinstance(err, PickleRefused) else EXIT_ERROR


def fail_with(err: BaseException) -> int:
    """The one message of a failure raised as an error (an ExplorerError); its exit code."""
    return fail(str(err), exit_code_of(err))


def add_bundle_query(sub, name: str, help: str, run, json_help: str | None = None):
    """A command that reads one bundle: ``tvm-explorer NAME BUNDLE [--json]``; its parser."""
    p = sub.add_parser(name, help=help)
    p.add_argument("bundle")
    p.add_argument("--json", action="store_true", help=json_help)
    p.set_defaults(run=run)
    return p


def load_bundle(bundle: str):
    """The bundle at ``bundle`` for a query; each section left out is named as a warning."""
    from tvm_explorer.bundle.reader import Bundle

    loaded = Bundle(bundle)
    for err in loaded.section_problems.values():  # left out; the rest of the bundle answers
        print(f"tvm-explorer: warning: {err}", file=sys.stderr)
    return loaded


def memory_limit_argument(text: str) -> float:
    """argparse type of ``--memory-limit``: a finite number of GiB, 0 for none."""
    from tvm_explorer.supervise.memlimit import gib_argument

    try:
        return gib_argument(text)
    except ValueError as err:
        raise argparse.ArgumentTypeError(str(err)) from None


def seconds_argument(text: str) -> float:
    """argparse type of ``--timeout``: a finite number of seconds, 0 for never."""
    import math

    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not math.isfinite(value) or value < 0:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds (0: no timeout)")
    return value


def input_shape_argument(text: str):
    """argparse type of ``--input-shape NAME=D1,D2,…``."""
    from tvm_explorer.frontends.input_shapes import parse_input_shape

    try:
        return parse_input_shape(text)
    except ValueError as err:
        raise argparse.ArgumentTypeError(str(err)) from None


def add_limit_options(
    p,
    timeout: float = DEFAULT_TIMEOUT,
    timeout_help: str | None = None,
    memory_help: str | None = None,
    memory: bool = True,
) -> None:
    """``--timeout SECONDS`` (default ``timeout``; 0: never) and, with ``memory``, ``--memory-limit
    GIB`` (default: 3/4 of the machine's memory): read back with ``limits_of``."""
    p.add_argument("--timeout", type=seconds_argument, default=timeout, metavar="SECONDS", help=timeout_help)
    if memory:
        p.add_argument(
            "--memory-limit",
            type=memory_limit_argument,
            default=default_memory_limit(),
            metavar="GIB",
            help=memory_help,
        )


def limits_of(args: argparse.Namespace) -> RunLimits:
    """The RunLimits of ``add_limit_options``'s options (no ``--memory-limit``: none)."""
    return RunLimits(timeout=args.timeout, memory_limit=getattr(args, "memory_limit", 0.0))


def section(value: _Section | None, bundle: str, name: str) -> _Section:
    """A section read from a bundle, or ExplorerError: a bundle compiled before it had ``name``."""
    if value is None:
        raise ExplorerError(f"{bundle}: the bundle has no {name} (compiled by an older tvm-explorer); recompile it")
    return value


def job_from(cls: type[_Job], args: argparse.Namespace, **given) -> _Job:
    """A job or its options (``app/jobs.py`` dataclasses) from a parsed command line: each
    field from the option of its name (``--trust-pickle``: ``trust_pickle``), ``limits`` from
    the limit options, ``given`` for the fields no option of their name says as they are."""
    values = dict(given)
    for f in dataclasses.fields(cls):
        if f.name in given:
            continue
        if f.name == "limits":
            values["limits"] = limits_of(args)
        elif hasattr(args, f.name):
            values[f.name] = getattr(args, f.name)
    return cls(**values)


def add_progress_option(p, choices: tuple[str, ...] = ("auto", "bar", "json", "none"), help: str | None = None) -> None:
    """``--progress``: how a long run shows how far it is (``cli/progress_display.py``)."""
    p.add_argument("--progress", choices=choices, default="auto", help=help)


def add_target_option(p, default: str | None, help: str | None = None) -> None:
    """``--target``: what to build for."""
    p.add_argument("--target", default=default, help=help)


def add_inputs_option(p, help: str, metavar: str = "FILE.npz") -> None:
    """``--inputs``: the model's inputs, by input name (default: seeded random values)."""
    p.add_argument("--inputs", metavar=metavar, help=help)


def add_reference_option(p, help: str) -> None:
    """``--reference REF``: a model of the same graph whose results are compared with ours."""
    p.add_argument("--reference", metavar="REF", help=help)


def add_in_process_option(p) -> None:
    """``--in-process`` (hidden, for tests): run in this process, not a supervised child."""
    p.add_argument("--in-process", action="store_true", help=argparse.SUPPRESS)


def add_pipeline_option(p, help: str) -> None:
    """``--pipeline MODULE:FUNCTION``: a Relax pipeline of the user's (imported: code)."""
    p.add_argument("--pipeline", metavar="MODULE:FUNCTION", help=help)


def add_trust_option(p) -> None:
    """``--trust-pickle`` of every command that reads a model."""
    p.add_argument(
        "--trust-pickle",
        action="store_true",
        help="load .pt2 files (the model and --reference) even if they hold Python "
        "pickles, which run code when loaded: only for files from someone you "
        f"trust (default: refused, exit code {EXIT_UNTRUSTED}; docs/reliability.md)",
    )

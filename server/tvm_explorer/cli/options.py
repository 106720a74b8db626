"""What several subcommands share: options (``--trust-pickle``, ``--timeout``,
``--memory-limit``), their effects, and loading a bundle for a query."""

from __future__ import annotations

import argparse
import os
import sys

from tvm_explorer.errors import EXIT_ERROR, EXIT_REMOTE, EXIT_UNTRUSTED, RemoteError

DEFAULT_TIMEOUT = 1800.0  # seconds; a compile of the largest test model takes well under 60 s


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


def trust_from_args(args) -> None:
    """``--trust-pickle``: this process may run the pickles of the .pt2 files it reads."""
    from tvm_explorer.frontends.torch.safe_load import trust_pickles

    trust_pickles(getattr(args, "trust_pickle", False))


def exit_code_of(err: BaseException) -> int:
    """The exit code of a failure reported as one message."""
    from tvm_explorer.frontends.torch.safe_load import PickleRefused

    if isinstance(err, RemoteError):
        return EXIT_REMOTE
    return EXIT_UNTRUSTED if isinstance(err, PickleRefused) else EXIT_ERROR


def load_bundle(bundle: str):
    """The bundle at ``bundle`` for a query; each section left out is named as a warning."""
    from tvm_explorer.bundle.reader import Bundle

    loaded = Bundle(bundle)
    for err in loaded.section_problems.values():  # left out; the rest of the bundle answers
        print(f"tvm-explorer: warning: {err}", file=sys.stderr)
    return loaded


def memory_limit_argument(text: str) -> float:
    """argparse type of ``--memory-limit``."""
    from tvm_explorer.supervise.memlimit import gib_argument

    return gib_argument(text)


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

"""``tvm-explorer``: compile a model into a bundle, query it, or serve it over LSP."""

from __future__ import annotations

import argparse
import sys

from tvm_explorer.version import __version__

SUBCOMMANDS = (
    "compile",
    "coverage",
    "origins",
    "history",
    "bisect",
    "extract",
    "compare",
    "costs",
    "memory",
    "tuning",
    "profile",
    "numerics",
    "overlays",
    "reduce",
    "report",
    "serve",
)


def build_parser() -> argparse.ArgumentParser:
    """The command-line interface: each subcommand's module adds its own parser."""
    import importlib

    parser = argparse.ArgumentParser(prog="tvm-explorer", description=__doc__)
    parser.add_argument("--version", action="version", version=f"tvm-explorer {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)
    for name in SUBCOMMANDS:
        try:
            module = importlib.import_module(f"tvm_explorer.cli.{name}")
        except ImportError:
            if name != "serve":  # the server needs pygls: without it, no ``serve``
                raise
            continue
        module.add_parser(sub)
    return parser


def main(argv=None) -> int:
    """Run the command line; returns the exit code."""
    for stream in (sys.stdout, sys.stderr):
        # Text from a bundle (pass names, opcodes) or a file name may hold lone surrogates:
        # printed escaped, never a UnicodeEncodeError.
        if hasattr(stream, "reconfigure"):
            stream.reconfigure(errors="backslashreplace")
    args = build_parser().parse_args(argv)
    run = getattr(args, "run", None) or args.func
    try:
        return run(args)
    except BrokenPipeError:
        return 0


if __name__ == "__main__":
    sys.exit(main())

"""Command line of tvm-explorer.

TEMPORARY on branch ``lsp``: only ``serve`` is wired here; the real CLI (compile, coverage,
origins) lives on ``main`` and gets ``add_serve_parser``/``run_serve`` from ``lsp.cli``.
"""

from __future__ import annotations

import argparse
import sys

from .lsp.cli import add_serve_parser


def main(argv: list[str] | None = None) -> int:
    """Parse the command line and run the subcommand."""
    parser = argparse.ArgumentParser(prog="tvm-explorer")
    sub = parser.add_subparsers(dest="command", required=True)
    add_serve_parser(sub)
    args = parser.parse_args(argv)
    return args.func(args)


if __name__ == "__main__":
    sys.exit(main())

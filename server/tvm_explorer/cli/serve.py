"""``tvm-explorer serve``: the language server on stdio (or TCP with ``--tcp``); the server
itself starts in ``lsp/launch.py``."""

from __future__ import annotations

import argparse


def add_parser(sub) -> None:
    """Add the ``serve`` subcommand."""
    parser = sub.add_parser(
        "serve",
        help="run the language server (stdio by default)",
        description="Serve the bundles of the workspace over the Language Server Protocol.",
    )
    parser.add_argument("--stdio", action="store_true", help="talk LSP over stdin/stdout (default)")
    parser.add_argument("--tcp", metavar="HOST:PORT", help="listen on a TCP port instead of stdio")
    parser.add_argument(
        "--poll-interval",
        type=float,
        default=1.0,
        metavar="SECONDS",
        help="how often to check bundles on disk for recompiles (0: never; default 1)",
    )
    parser.add_argument("--log-file", help="write a debug log to this file")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Serve until the client disconnects; the exit status."""
    from tvm_explorer.lsp.launch import serve

    return serve(tcp=args.tcp, poll_interval=args.poll_interval, log_file=args.log_file)

"""Start the language server (stdio, or TCP with ``--tcp``): ``tvm-explorer serve``
(``cli/serve.py`` adds the subcommand through ``add_arguments``) and
``python -m tvm_explorer.lsp``. pygls is imported only when the server starts.
"""

from __future__ import annotations

import argparse
import logging
import sys

SWITCH_INTERVAL_S = 0.001


def add_parser(subparsers) -> argparse.ArgumentParser:
    """Add the ``serve`` subcommand to an ``argparse`` subparsers object."""
    parser = subparsers.add_parser(
        "serve",
        help="run the language server (stdio by default)",
        description="Serve the bundles of the workspace over the Language Server Protocol.",
    )
    add_arguments(parser)
    return parser


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The options of ``serve``; running the parsed arguments serves."""
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
    parser.set_defaults(func=run_serve)


def _raise_open_files_limit() -> None:
    """A loaded bundle keeps its documents open (so that a recompile replacing it cannot mix
    into its answers): allow as many open files as the system lets this process have."""
    try:
        import resource

        soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        if hard == resource.RLIM_INFINITY or soft < hard:
            resource.setrlimit(
                resource.RLIMIT_NOFILE, (hard if hard != resource.RLIM_INFINITY else max(soft, 65536), hard)
            )
    except (ImportError, ValueError, OSError):
        pass  # not on this platform, or not allowed: the default limit stays


def run_serve(args: argparse.Namespace) -> int:
    """Run the server until the client disconnects; returns the exit status."""
    from tvm_explorer.lsp import heap
    from tvm_explorer.lsp.server import create_server  # pygls is only imported when serving

    # stdout carries the protocol: logs go to a file or to stderr, never to stdout.
    target = {"filename": args.log_file} if args.log_file else {"stream": sys.stderr}
    logging.basicConfig(
        level=logging.DEBUG if args.log_file else logging.WARNING,
        format="%(asctime)s %(name)s %(levelname)s %(message)s",
        **target,
    )
    _raise_open_files_limit()
    heap.one_heap()
    # A request waits for the interpreter while a warm-up thread runs: hand it over every
    # millisecond, not every five (the default), so that answers stay within milliseconds.
    sys.setswitchinterval(SWITCH_INTERVAL_S)
    server = create_server(poll_interval=args.poll_interval)
    heap.settle()  # the modules' few hundred thousand objects: out of every later collection
    if args.tcp:
        host, _, port = args.tcp.rpartition(":")
        try:
            port_number = int(port)
        except ValueError:
            print(f"tvm-explorer serve: --tcp wants HOST:PORT, not {args.tcp!r}", file=sys.stderr)
            return 2
        return server.serve_tcp(host or "127.0.0.1", port_number)
    return server.start_io()


def main(argv: list[str] | None = None) -> int:
    """``python -m tvm_explorer.lsp``: the ``serve`` subcommand on its own."""
    parser = argparse.ArgumentParser(prog="tvm-explorer")
    sub = parser.add_subparsers(dest="command", required=True)
    add_parser(sub)
    args = parser.parse_args(["serve", *(sys.argv[1:] if argv is None else argv)])
    return run_serve(args)

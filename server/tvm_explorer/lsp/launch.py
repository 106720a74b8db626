"""Start the language server (stdio, or TCP with ``--tcp``): ``tvm-explorer serve``
(``cli/serve.py`` reads its options and calls ``serve``). pygls is imported only when the
server starts.
"""

from __future__ import annotations

import logging
import sys

SWITCH_INTERVAL_S = 0.001


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


def serve(tcp: str | None = None, poll_interval: float = 1.0, log_file: str | None = None) -> int:
    """Run the server until the client disconnects; returns the exit status. ``tcp``:
    ``HOST:PORT`` to listen on instead of stdio; ``poll_interval``: seconds between checks of
    the bundles on disk for recompiles (0: never); ``log_file``: a debug log."""
    from tvm_explorer.lsp import heap
    from tvm_explorer.lsp.server import create_server  # pygls is only imported when serving

    # stdout carries the protocol: logs go to a file or to stderr, never to stdout.
    target = {"filename": log_file} if log_file else {"stream": sys.stderr}
    logging.basicConfig(
        level=logging.DEBUG if log_file else logging.WARNING,
        format="%(asctime)s %(name)s %(levelname)s %(message)s",
        **target,
    )
    _raise_open_files_limit()
    heap.one_heap()
    # A request waits for the interpreter while a warm-up thread runs: hand it over every
    # millisecond, not every five (the default), so that answers stay within milliseconds.
    sys.setswitchinterval(SWITCH_INTERVAL_S)
    server = create_server(poll_interval=poll_interval)
    heap.settle()  # the modules' few hundred thousand objects: out of every later collection
    if tcp:
        host, _, port = tcp.rpartition(":")
        try:
            port_number = int(port)
        except ValueError:
            print(f"tvm-explorer serve: --tcp wants HOST:PORT, not {tcp!r}", file=sys.stderr)
            return 2
        return server.serve_tcp(host or "127.0.0.1", port_number)
    return server.start_io()

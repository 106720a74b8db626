"""``tvm-explorer``: compile a TFLite model into a bundle, query it, or serve it over LSP."""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import time
from pathlib import Path

from . import __version__
from .errors import ExplorerError

EXIT_ERROR = 2
EXIT_CRASH = 3
EXIT_TIMEOUT = 4
EXIT_INTERRUPTED = 130

DEFAULT_TIMEOUT = 1800.0  # seconds; a compile of the largest test model takes well under 60 s
GRACE = 10.0  # seconds a stopped compile gets to clean up before it is killed
_STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGUSR1)  # SIGUSR1: the timeout


def _fail(message: str, code: int = EXIT_ERROR) -> int:
    print(f"tvm-explorer: error: {message}", file=sys.stderr)
    return code


def _default_memory_limit() -> float:
    """GiB: three quarters of the machine's memory, at least 4."""
    try:
        total = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30
    except (ValueError, OSError, AttributeError):
        return 16.0
    return max(4.0, round(0.75 * total, 1))


def _apply_memory_limit(gib: float) -> None:
    """Cap the address space of this (compile) process, so that a model that makes TVM
    allocate without bound fails with a message instead of waking the OOM killer."""
    if not gib or gib <= 0:
        return
    try:
        import resource

        soft, hard = resource.getrlimit(resource.RLIMIT_AS)
        limit = int(gib * 2**30)
        if hard != resource.RLIM_INFINITY:
            limit = min(limit, hard)
        if soft == resource.RLIM_INFINITY or limit < soft:
            resource.setrlimit(resource.RLIMIT_AS, (limit, hard))
    except (ImportError, ValueError, OSError):
        pass


# -- compile ------------------------------------------------------------------------------
def _stopped_message(args, why: str, committed: bool) -> str:
    if committed:
        return (f"{why} after the bundle was written; {args.output} is complete")
    return f"{why}; no bundle was written (a previous bundle is unchanged)"


def _compile_in_this_process(args) -> int:
    from .bundle import writer

    stop: dict = {}
    # Interrupts are raised into the code only while it compiles; one arriving later (or
    # while an error is being reported) is noted and reported once, never raised where
    # nothing would catch it.
    compiling = {"now": False}

    def on_signal(signum, _frame):
        if stop:
            return  # already stopping: let the cleanup finish
        stop["why"] = (f"{args.model}: compile did not finish within {args.timeout:g} s (--timeout)"
                       if signum == signal.SIGUSR1 else f"interrupted ({signal.Signals(signum).name})")
        stop["code"] = EXIT_TIMEOUT if signum == signal.SIGUSR1 else EXIT_INTERRUPTED
        if compiling["now"]:
            raise KeyboardInterrupt(stop["why"])

    def committed() -> bool:
        return bool(args.output) and Path(args.output).absolute() in writer.COMMITTED

    for sig in _STOP_SIGNALS:
        signal.signal(sig, on_signal)
    try:
        compiling["now"] = True
        try:
            signal.pthread_sigmask(signal.SIG_UNBLOCK, _STOP_SIGNALS)
            _apply_memory_limit(args.memory_limit)
            from .model.loader import load_model

            model = load_model(args.model)  # a bad file fails fast, before TVM is even imported
            from .numerics.command import prepare as prepare_numerics

            numerics = prepare_numerics(args, model)  # bad --inputs/--reference fail here
            from .capture.api import compile_model

            result = compile_model(
                args.model, None if args.no_spans else args.output, args.target,
                fill_spans=not args.no_spans,
                exact_origins=args.exact_origins, schedule_records=not args.no_schedule_records,
                after_build=numerics.after_build if numerics else None,
                pipeline=args.pipeline,
            )
        finally:
            compiling["now"] = False
    except BaseException as err:  # noqa: BLE001 - every way out gets one message
        if stop or isinstance(err, KeyboardInterrupt):
            # An interrupt may also surface as a TVM error raised around a Python callback.
            why = stop.get("why", "interrupted")
            return _fail(_stopped_message(args, why, committed()), stop.get("code", EXIT_INTERRUPTED))
        if isinstance(err, MemoryError) or (isinstance(err, ExplorerError) and "bad_alloc" in str(err)):
            detail = str(err) if isinstance(err, ExplorerError) else f"{args.model}: MemoryError"
            return _fail(f"{detail} (the compile ran out of memory; its limit is "
                         f"{args.memory_limit:g} GiB, see --memory-limit)")
        if isinstance(err, ExplorerError):
            return _fail(str(err))
        if isinstance(err, SystemExit):
            raise
        import traceback

        traceback.print_exc()
        return _fail(f"{args.model}: internal error ({type(err).__name__}: {err}); "
                     "no bundle was written; please report this")
    for sig in _STOP_SIGNALS:
        signal.signal(sig, signal.SIG_IGN)  # the bundle is in place: finish the report
    if stop:  # arrived just as the compile finished: it stands, and the user hears of both
        return _fail(_stopped_message(args, stop["why"], committed()), stop["code"])
    if args.no_spans:
        print(f"{args.model}: compiled for {args.target} with stock TVM (span filling off); "
              "nothing recorded, no bundle written")
        return 0
    bundle = result.bundle
    print(f"Bundle written: {bundle}")
    print(f"  {result.passes} passes recorded, {result.documents} documents")
    for kind, cov in sorted(result.coverage.items()):
        print(f"  generated {kind}: {cov['attributed']}/{cov['units']} computing lines attributed")
    for line in numerics.report() if numerics else ():
        print(line)
    print("Open it in an editor with the TVM Explorer language server (VS Code: docs/vscode.md):")
    print(f"  code {bundle}")
    code = {"c": "code/module.c", "cuda": "code/device.cu"}.get(args.target)
    if code:
        print(f"Ask where a line came from:\n  tvm-explorer origins {bundle} {code}:LINE")
    return 0


def _run_compile(args) -> int:
    """Compile in a child process so that a crash inside TVM is reported, not inherited, and
    a compile that hangs (``--timeout``) or ignores an interrupt can be stopped."""
    if not args.output and not args.no_spans:
        return _fail("compile: -o/--output BUNDLE is required (unless --no-spans)")
    if args.in_process or not hasattr(os, "fork"):
        return _compile_in_this_process(args)
    sys.stdout.flush()
    sys.stderr.flush()
    # Signals wait until each process has its handlers (no window where one is lost).
    signal.pthread_sigmask(signal.SIG_BLOCK, _STOP_SIGNALS)
    err_r, err_w = os.pipe()
    pid = os.fork()
    if pid == 0:  # child
        code = 1
        try:
            os.close(err_r)
            os.dup2(err_w, 2)
            os.close(err_w)
            code = _compile_in_this_process(args)
        finally:
            sys.stdout.flush()
            sys.stderr.flush()
            os._exit(code)
    os.close(err_w)
    try:
        return _supervise(args, pid, _ChildErrors(err_r))
    finally:
        os.close(err_r)


class _ChildErrors:
    """Passes the compiling child's stderr through, except TVM's native crash dump (it
    starts with "Segfault encountered"), which goes to a file the crash message names."""

    CRASH_MARKERS = (b"Segfault encountered", b"!!!!!!!")

    def __init__(self, fd: int):
        self.fd = fd
        self.pending = b""
        self.dump: list[bytes] = []

    def pump(self, timeout: float) -> None:
        """Forward what the child wrote within ``timeout`` seconds."""
        import select

        try:
            ready, _, _ = select.select([self.fd], [], [], timeout)
        except InterruptedError:
            return
        if not ready:
            return
        chunk = os.read(self.fd, 65536)
        if not chunk:
            time.sleep(timeout)  # the child closed stderr; keep polling its exit
            return
        self.pending += chunk
        *lines, self.pending = self.pending.split(b"\n")
        for line in lines:
            self._line(line + b"\n")

    def finish(self) -> None:
        """Forward everything left once the child is gone."""
        while True:
            try:
                chunk = os.read(self.fd, 65536)
            except OSError:
                break
            if not chunk:
                break
            self.pending += chunk
        for line in self.pending.splitlines(keepends=True):
            self._line(line)
        self.pending = b""

    def _line(self, line: bytes) -> None:
        if self.dump or any(m in line for m in self.CRASH_MARKERS):
            self.dump.append(line)
            return
        sys.stderr.buffer.write(line)
        sys.stderr.flush()

    def save_dump(self) -> str | None:
        """Write the native crash dump to a file; its path, or None if there was none."""
        if not self.dump:
            return None
        import tempfile

        fd, path = tempfile.mkstemp(prefix="tvm-explorer-crash-", suffix=".txt")
        with os.fdopen(fd, "wb") as fh:
            fh.writelines(self.dump)
        return path


def _supervise(args, pid: int, errors: _ChildErrors) -> int:
    """Wait for the compiling child; forward interrupts, enforce the timeout, and kill it if
    it does not stop within GRACE seconds. Exactly one message reaches the user."""
    state = {"stop": None, "kill_at": None, "killed": False}

    def forward(signum, _frame):
        if state["stop"] is None:
            state["stop"] = signal.Signals(signum).name
            state["kill_at"] = time.monotonic() + GRACE
        _signal_child(pid, signum)

    signal.signal(signal.SIGTERM, forward)
    signal.signal(signal.SIGINT, forward)  # from a terminal the child gets Ctrl-C as well
    signal.signal(signal.SIGUSR1, signal.SIG_IGN)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, _STOP_SIGNALS)
    deadline = time.monotonic() + args.timeout if args.timeout and args.timeout > 0 else None
    timed_out = False
    while True:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            break
        now = time.monotonic()
        if deadline is not None and now >= deadline and not timed_out and state["stop"] is None:
            timed_out = True
            state["kill_at"] = now + GRACE
            _signal_child(pid, signal.SIGUSR1)
        if state["kill_at"] is not None and now >= state["kill_at"] and not state["killed"]:
            state["killed"] = True
            _signal_child(pid, signal.SIGKILL)
        errors.pump(0.05)
    errors.finish()
    if os.WIFEXITED(status):
        return os.WEXITSTATUS(status)
    sig = signal.Signals(os.WTERMSIG(status)).name
    _remove_partial(args.output, pid)
    if timed_out:
        return _fail(f"{args.model}: compile did not finish within {args.timeout:g} s (--timeout) "
                     f"and was killed; no bundle was written (a previous bundle is unchanged)",
                     EXIT_TIMEOUT)
    if state["stop"] is not None:
        how = " and was killed" if state["killed"] else ""
        return _fail(f"interrupted ({state['stop']}){how}; no bundle was written "
                     "(a previous bundle is unchanged)", EXIT_INTERRUPTED)
    dump = errors.save_dump()
    where = f"; TVM's crash report: {dump}" if dump else ""
    return _fail(f"{args.model}: TVM crashed ({sig}) while compiling for {args.target}; "
                 f"no bundle was written (a previous bundle is unchanged){where}", EXIT_CRASH)


def _signal_child(pid: int, signum) -> None:
    try:
        os.kill(pid, signum)
    except ProcessLookupError:
        pass


def _remove_partial(output: str | None, pid: int) -> None:
    import shutil

    if not output:
        return
    dest = Path(output).absolute()
    shutil.rmtree(dest.parent / f".{dest.name}.tmp-{pid}", ignore_errors=True)


# -- queries ------------------------------------------------------------------------------
def _load(bundle: str):
    from .bundle.reader import Bundle

    return Bundle(bundle)


def _run_coverage(args) -> int:
    try:
        b = _load(args.bundle)
    except ExplorerError as err:
        return _fail(str(err))
    rows = [
        {k: p.get(k) for k in ("index", "name", "stage", "changed")}
        | {k: p.get(k, 0) for k in ("units", "attributed")}
        | {k: p[k] for k in ("tir_units", "tir_attributed", "note") if k in p}
        for p in b.manifest["passes"]
    ]
    if args.json:
        print(json.dumps({"passes": rows}, indent=1))
        return 0
    print(f"{'#':>4}  {'stage':6} {'pass':45} {'units':>7} {'attributed':>10}   %")
    for r in rows:
        pct = 100.0 * r["attributed"] / r["units"] if r["units"] else 100.0
        mark = "" if r.get("changed") else "  (unchanged)"
        print(f"{r['index']:>4}  {r['stage']:6} {r['name'][:45]:45} {r['units']:>7} "
              f"{r['attributed']:>10} {pct:6.1f}{mark}")
    return 0


def _parse_position(text: str) -> tuple[str, int, int | None]:
    parts = text.rsplit(":", 2)
    try:
        if len(parts) == 3 and parts[1].isdigit() and parts[2].isdigit():
            return parts[0], int(parts[1]), int(parts[2])
        path, line = text.rsplit(":", 1)
        return path, int(line), None
    except ValueError:
        raise ExplorerError(f"{text!r}: expected FILE:LINE[:COL] (1-based line and column)") from None


def _run_origins(args) -> int:
    try:
        b = _load(args.bundle)
        path, line, col = _parse_position(args.position)
        if b.document(path) is None:
            raise ExplorerError(f"{path}: not a document of bundle {args.bundle}")
        if line < 1:
            raise ExplorerError(f"{args.position}: lines start at 1")
        text_line = b.text(path).split("\n")[line - 1] if line <= len(b.text(path).split("\n")) else None
        if text_line is None:
            raise ExplorerError(f"{path}: line {line} is past the end of the document")
        column = (col - 1) if col else len(text_line) - len(text_line.lstrip())
        offset = b.offset_of(path, line - 1, column)
        origins = b.origins_at(path, offset)
    except ExplorerError as err:
        return _fail(str(err))
    if args.json:
        print(json.dumps({"origins": [o.to_json() for o in origins]}, indent=1))
        return 0
    if not origins:
        print(f"{path}:{line}: no origin recorded here")
    for o in origins:
        role = "layer output" if o.is_output else "part of layer"
        where = f"subgraph {o.layer.subgraph} " if o.layer.subgraph else ""
        print(f"{where}op {o.layer.op_index} {o.layer.opcode} ({role}) -> {', '.join(o.layer.outputs)}")
    return 0


# -- entry --------------------------------------------------------------------------------
def build_parser() -> argparse.ArgumentParser:
    """The command-line interface."""
    parser = argparse.ArgumentParser(prog="tvm-explorer", description=__doc__)
    parser.add_argument("--version", action="version", version=f"tvm-explorer {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("compile", help="compile a TFLite model into an explorer bundle")
    p.add_argument("model", help="the .tflite model")
    p.add_argument("-o", "--output", help="bundle directory to write")
    p.add_argument("--target", default="c", help="c (default), llvm or cuda")
    p.add_argument("--exact-origins", action="store_true",
                   help="one PrimFunc per call site, so every statement has exactly one origin")
    p.add_argument("--no-schedule-records", action="store_true",
                   help="do not record GPU schedule traces")
    p.add_argument("--no-spans", action="store_true",
                   help="span filling off: a plain stock TVM compile that records nothing and "
                        "writes no bundle (to compare overhead)")
    p.add_argument("--timeout", type=float, default=DEFAULT_TIMEOUT, metavar="SECONDS",
                   help=f"stop a compile that runs longer (default {DEFAULT_TIMEOUT:g}; 0: never)")
    p.add_argument("--memory-limit", type=float, default=_default_memory_limit(), metavar="GIB",
                   help="address-space limit of the compile (default: 3/4 of the memory, "
                        "at least 4 GiB; 0: none)")
    p.add_argument("--pipeline", metavar="MODULE:FUNCTION",
                   help="compile with your own Relax pipeline: FUNCTION(target) returns a "
                        "tvm.transform.Pass; MODULE is imported from the current directory or "
                        "PYTHONPATH (default: TVM's pipeline for the target)")
    p.add_argument("--in-process", action="store_true", help=argparse.SUPPRESS)
    from .numerics.command import add_compile_options, add_query_parser

    add_compile_options(p)
    p.set_defaults(run=_run_compile)

    p = sub.add_parser("coverage", help="per pass: units and how many have origins")
    p.add_argument("bundle")
    p.add_argument("--json", action="store_true")
    p.set_defaults(run=_run_coverage)

    p = sub.add_parser("origins", help="origin layers of a position in a bundle document")
    p.add_argument("bundle")
    p.add_argument("position", help="FILE:LINE[:COL], FILE relative to the bundle, 1-based")
    p.add_argument("--json", action="store_true")
    p.set_defaults(run=_run_origins)

    add_query_parser(sub)
    from .bisect.command import add_parser as add_bisect_parser

    add_bisect_parser(sub)

    try:
        from .lsp.cli import add_serve_parser
    except ImportError:
        add_serve_parser = None
    if add_serve_parser is not None:
        add_serve_parser(sub)
    return parser


def main(argv=None) -> int:
    """Run the command line; returns the exit code."""
    args = build_parser().parse_args(argv)
    run = getattr(args, "run", None) or args.func
    try:
        return run(args)
    except BrokenPipeError:
        return 0


if __name__ == "__main__":
    sys.exit(main())

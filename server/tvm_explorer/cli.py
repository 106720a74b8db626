"""``tvm-explorer``: compile a TFLite model into a bundle, query it, or serve it over LSP."""

from __future__ import annotations

import argparse
import re
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
EXIT_UNTRUSTED = 5  # a .pt2 holds a pickle: refused unless --trust-pickle (VS Code asks, retries)
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
    """Cap the address space of this (compile) process (see ``memlimit.apply``)."""
    from . import memlimit

    memlimit.apply(gib)


# -- compile ------------------------------------------------------------------------------
def _stopped_message(args, why: str, committed: bool) -> str:
    if committed:
        return (f"{why} after the bundle was written; {args.output} is complete")
    return f"{why}; no bundle was written (a previous bundle is unchanged)"


def trust_from_args(args) -> None:
    """``--trust-pickle``: this process may run the pickles of the .pt2 files it reads."""
    from .frontends.torch.safe_load import trust_pickles

    trust_pickles(getattr(args, "trust_pickle", False))


def exit_code_of(err: BaseException) -> int:
    """The exit code of a failure reported as one message."""
    from .frontends.torch.safe_load import PickleRefused

    return EXIT_UNTRUSTED if isinstance(err, PickleRefused) else EXIT_ERROR


def _compile_in_this_process(args) -> int:
    from .bundle import writer

    trust_from_args(args)

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
            from .frontends import load_any

            model = load_any(args.model)  # a bad file fails fast (a .tflite before TVM is imported)
            from .numerics.command import prepare as prepare_numerics

            numerics = prepare_numerics(args, model)  # bad --inputs/--reference fail here
            from .capture.api import compile_model
            from .capture.parallel_print import ENV_WORKERS
            from .costs.cli import profile_request

            # This process only compiles: it may fork printers onto idle cores (the Python
            # API prints inline unless asked: a host program's threads make forking unsafe).
            os.environ.setdefault(ENV_WORKERS, "auto")
            from .progress.display import progress_display

            with progress_display("none" if args.no_spans else args.progress) as on_progress:
                result = compile_model(
                    model, None if args.no_spans else args.output, args.target,
                    fill_spans=not args.no_spans,
                    exact_origins=args.exact_origins, schedule_records=not args.no_schedule_records,
                    on_progress=on_progress, profile=profile_request(args),
                    after_build=numerics.after_build if numerics else None,
                    after_build_steps=1 if numerics else 0,
                    pipeline=args.pipeline,
                )
        finally:
            compiling["now"] = False
    except BaseException as err:  # noqa: BLE001 - every way out gets one message
        if stop or isinstance(err, KeyboardInterrupt):
            # An interrupt may also surface as a TVM error raised around a Python callback.
            why = stop.get("why", "interrupted")
            return _fail(_stopped_message(args, why, committed()), stop.get("code", EXIT_INTERRUPTED))
        from . import memlimit

        if not isinstance(err, (KeyboardInterrupt, SystemExit)) and memlimit.hit_limit(err, args.memory_limit):
            return _fail(memlimit.message(err, args.memory_limit, args.model))
        if isinstance(err, ExplorerError):
            return _fail(str(err), exit_code_of(err))
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
    from .costs.cli import report

    unit = "op" if getattr(model, "kind", "tflite") == "tflite" else "node"
    for line in [*report(result.costs, unit), *(numerics.report() if numerics else ())]:
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
    if args.output and not args.no_spans:
        from .bundle.writer import check_destination

        try:  # before anything is compiled: only a bundle the tool wrote is replaced
            check_destination(args.output, (args.model,))
        except ExplorerError as err:
            return _fail(str(err))
    if args.in_process or not hasattr(os, "fork"):
        return _compile_in_this_process(args)
    return run_supervised(args, _compile_in_this_process)


def run_supervised(args, body) -> int:
    """``body(args)`` in a child process, supervised: a crash inside TVM is reported, not
    inherited, and a run that hangs (``args.timeout``) or ignores an interrupt is stopped; the
    child dies with this process (``compile``, ``bisect``)."""
    sys.stdout.flush()
    sys.stderr.flush()
    # Signals wait until each process has its handlers (no window where one is lost).
    signal.pthread_sigmask(signal.SIG_BLOCK, _STOP_SIGNALS)
    err_r, err_w = os.pipe()
    from .lifeline import Lifeline

    lifeline = Lifeline()  # the child dies with this process and never commits after it
    pid = os.fork()
    if pid == 0:  # child
        code = 1
        try:
            os.close(err_r)
            os.dup2(err_w, 2)
            os.close(err_w)
            lifeline.attach_child(GRACE)
            from .bundle import writer

            writer.COMMIT_GUARDS.append(lifeline.check)
            _mark_tvm_logging()
            code = body(args)
        finally:
            try:
                sys.stdout.flush()
                sys.stderr.flush()
            finally:
                os._exit(code)
    lifeline.hold_in_parent()
    os.close(err_w)
    try:
        return _supervise(args, pid, _ChildErrors(err_r))
    finally:
        os.close(err_r)


TVM_LOG_PREFIX = "[tvm] "


def _mark_tvm_logging() -> None:
    """TVM's Python warnings (``logging`` under ``tvm``) go to stderr marked, so that the
    supervisor can keep them out of the terminal with TVM's native log lines."""
    import logging

    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter(TVM_LOG_PREFIX + "%(name)s: %(levelname)s: %(message)s"))
    log = logging.getLogger("tvm")
    log.addHandler(handler)
    log.propagate = False


class _ChildErrors:
    """Passes the compiling child's stderr through, except TVM's native crash dump (it
    starts with "Segfault encountered"), which goes to a file the crash message names, and
    TVM's own log lines (``[12:34:56] …/block_builder.cc:67: Warning: …``, its Python
    warnings), which go to a log file (``chatter_file``): they are TVM's notes to its own
    developers, and one came after our error message as the last line."""

    CRASH_MARKERS = (b"Segfault encountered", b"!!!!!!!")
    CHATTER = re.compile(rb"^(\[\d\d:\d\d:\d\d\] \S+\.(?:cc|h|cpp):\d+: |"
                         + re.escape(TVM_LOG_PREFIX.encode()) + rb")")

    def __init__(self, fd: int):
        self.fd = fd
        self.pending = b""
        self.dump: list[bytes] = []
        self.chatter: list[bytes] = []

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

    def finish(self, within: float = 5.0) -> None:
        """Forward everything left once the child is gone: until end of file, or ``within``
        seconds (a process the child started and that outlived it may hold its stderr open;
        the CLI must not wait for that one)."""
        import select

        deadline = time.monotonic() + within
        while True:
            left = deadline - time.monotonic()
            try:
                ready, _, _ = select.select([self.fd], [], [], max(left, 0))
                chunk = os.read(self.fd, 65536) if ready else b""
            except InterruptedError:
                continue
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
        if self.CHATTER.match(line):
            self.chatter.append(line)
            return
        sys.stderr.buffer.write(line)
        sys.stderr.flush()

    def chatter_file(self) -> str | None:
        """Write TVM's log lines to a file; its path, or None if TVM said nothing."""
        return _lines_to_file(self.chatter, "tvm-explorer-tvm-", ".log")

    def save_dump(self) -> str | None:
        """Write the native crash dump to a file; its path, or None if there was none."""
        return _lines_to_file(self.dump, "tvm-explorer-crash-", ".txt")


def _lines_to_file(lines: list[bytes], prefix: str, suffix: str) -> str | None:
    """``lines`` written to a new temporary file; its path, or None if there are none."""
    if not lines:
        return None
    import tempfile

    fd, path = tempfile.mkstemp(prefix=prefix, suffix=suffix)
    with os.fdopen(fd, "wb") as fh:
        fh.writelines(lines)
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
        code = os.WEXITSTATUS(status)
        # After a failure our message is the one that says what happened; TVM's log lines
        # (a BlockBuilder destroyed with open blocks, ...) are its consequences.
        chatter = errors.chatter_file() if code == 0 else None
        if chatter:
            print(f"note: TVM's own log lines ({len(errors.chatter)}) are in {chatter}", file=sys.stderr)
        return code
    sig = signal.Signals(os.WTERMSIG(status)).name
    _remove_partial(args.output, pid)
    if timed_out:
        return _fail(f"{args.model}: {_activity(args)[0]} did not finish within {args.timeout:g} s (--timeout) "
                     f"and was killed; no bundle was written (a previous bundle is unchanged)",
                     EXIT_TIMEOUT)
    if state["stop"] is not None:
        how = " and was killed" if state["killed"] else ""
        return _fail(f"interrupted ({state['stop']}){how}; no bundle was written "
                     "(a previous bundle is unchanged)", EXIT_INTERRUPTED)
    dump = errors.save_dump()
    where = f"; TVM's crash report: {dump}" if dump else ""
    if sig not in _CRASH_SIGNALS and not dump:
        # Not a fault of TVM's: someone (or the kernel) killed the child.
        oom = " (possibly the kernel's out-of-memory killer)" if sig == "SIGKILL" else ""
        return _fail(f"{args.model}: the compiling process was killed by {sig}, a signal from "
                     f"outside tvm-explorer{oom}, while {_activity(args)[1]} for {args.target}; no bundle "
                     "was written (a previous bundle is unchanged)", EXIT_CRASH)
    return _fail(f"{args.model}: TVM crashed ({sig}) while {_activity(args)[1]} for {args.target}; "
                 f"no bundle was written (a previous bundle is unchanged){where}", EXIT_CRASH)


def _activity(args) -> tuple[str, str]:
    """What the supervised child does, for messages: ``("compile", "compiling")``."""
    return getattr(args, "activity", ("compile", "compiling"))


_CRASH_SIGNALS = ("SIGSEGV", "SIGBUS", "SIGILL", "SIGFPE", "SIGABRT", "SIGSYS", "SIGTRAP")
"""Signals a process raises against itself when its code faults: a crash inside TVM."""


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

    loaded = Bundle(bundle)
    for err in loaded.section_problems.values():  # left out; the rest of the bundle answers
        print(f"tvm-explorer: warning: {err}", file=sys.stderr)
    return loaded


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
    """``FILE:LINE[:COL]`` (1-based); a line or column that is a number but not a valid
    one is reported as such, not taken as part of the file name."""
    import re

    match = re.fullmatch(r"(.+?):([+-]?\d+)(?::([+-]?\d+))?", text, re.DOTALL)
    if not match:
        raise ExplorerError(f"{text!r}: expected FILE:LINE[:COL] (1-based line and column)")
    path, line, col = match.group(1), int(match.group(2)), match.group(3)
    if line < 1:
        raise ExplorerError(f"{text}: line {line} is invalid (lines start at 1)")
    if col is not None and int(col) < 1:
        raise ExplorerError(f"{text}: column {int(col)} is invalid (columns start at 1)")
    return path, line, None if col is None else int(col)


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
        if col is not None and col > len(text_line) + 1:
            raise ExplorerError(f"{args.position}: column {col} is past the end of line {line} "
                                f"({len(text_line)} characters)")
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
    from .navigation.sources import layer_caption

    for o in origins:
        role = "layer output" if o.is_output else "part of layer"
        where = f"subgraph {o.layer.subgraph} " if o.layer.subgraph else ""
        caption = layer_caption(o.layer, full_path=True)
        caption = f" {caption}" if caption else ""
        print(f"{where}op {o.layer.op_index} {o.layer.opcode}{caption} ({role}) -> "
              f"{', '.join(o.layer.outputs)}")
    return 0


# -- entry --------------------------------------------------------------------------------
def _memory_limit_argument(text: str) -> float:
    from .memlimit import gib_argument

    return gib_argument(text)


def _seconds_argument(text: str) -> float:
    """argparse type of ``--timeout``: a finite number of seconds, 0 for never."""
    import math

    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not math.isfinite(value) or value < 0:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds (0: no timeout)")
    return value


def add_trust_option(p) -> None:
    """``--trust-pickle`` of every command that reads a model."""
    p.add_argument("--trust-pickle", action="store_true",
                   help="load .pt2 files (the model and --reference) even if they hold Python "
                        "pickles, which run code when loaded: only for files from someone you "
                        f"trust (default: refused, exit code {EXIT_UNTRUSTED}; docs/reliability.md)")


def build_parser() -> argparse.ArgumentParser:
    """The command-line interface."""
    parser = argparse.ArgumentParser(prog="tvm-explorer", description=__doc__)
    parser.add_argument("--version", action="version", version=f"tvm-explorer {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("compile", help="compile a model into an explorer bundle")
    p.add_argument("model", help="the model: .tflite, .onnx or .pt2 (a saved torch.export program)")
    p.add_argument("-o", "--output", help="bundle directory to write")
    p.add_argument("--target", default="c", help="c (default), llvm or cuda")
    p.add_argument("--exact-origins", action="store_true",
                   help="one PrimFunc per call site, so every statement has exactly one origin")
    p.add_argument("--no-schedule-records", action="store_true",
                   help="do not record GPU schedule traces")
    p.add_argument("--no-spans", action="store_true",
                   help="span filling off: a plain stock TVM compile that records nothing and "
                        "writes no bundle (to compare overhead)")
    p.add_argument("--timeout", type=_seconds_argument, default=DEFAULT_TIMEOUT, metavar="SECONDS",
                   help=f"stop a compile that runs longer (default {DEFAULT_TIMEOUT:g}; 0: never)")
    p.add_argument("--memory-limit", type=_memory_limit_argument, default=_default_memory_limit(), metavar="GIB",
                   help="address-space limit of the compile (default: 3/4 of the memory, "
                        "at least 4 GiB; 0: none)")
    p.add_argument("--progress", choices=("auto", "bar", "json", "none"), default="auto",
                   help="progress: a bar on a terminal (auto, the default), JSON lines on "
                        "stdout (json), or none")
    p.add_argument("--pipeline", metavar="MODULE:FUNCTION",
                   help="compile with your own Relax pipeline: FUNCTION(target) returns a "
                        "tvm.transform.Pass; MODULE is imported from the current directory or "
                        "PYTHONPATH (default: TVM's pipeline for the target)")
    add_trust_option(p)
    p.add_argument("--in-process", action="store_true", help=argparse.SUPPRESS)
    from .costs.cli import add_costs_parser, add_profile_options
    from .numerics.command import add_compile_options, add_query_parser

    add_profile_options(p)
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

    from .reproducers.cli import add_extract_parser
    from .bisect.command import add_parser as add_bisect_parser

    add_bisect_parser(sub)

    add_extract_parser(sub)
    from .compare.cli import add_compare_parser

    add_compare_parser(sub)
    add_costs_parser(sub)
    add_query_parser(sub)
    try:
        from .lsp.cli import add_serve_parser
    except ImportError:
        add_serve_parser = None
    if add_serve_parser is not None:
        add_serve_parser(sub)
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

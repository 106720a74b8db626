"""Run a command's work (``compile``, ``bisect``) in a supervised child process: a crash
inside TVM is reported, not inherited; a run that hangs (``--timeout``) or ignores an interrupt
is stopped; the child dies with its parent (``lifeline``); TVM's native log lines and crash
dumps go to files; exactly one message reaches the user."""

from __future__ import annotations

import os
import re
import signal
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from tvm_explorer.errors import EXIT_CRASH, EXIT_INTERRUPTED, EXIT_TIMEOUT
from tvm_explorer.errors import fail as _fail

GRACE = 10.0  # seconds a stopped compile gets to clean up before it is killed, while it commits
STOP_WAIT = 0.25  # seconds a stopped child that cannot commit any more gets to stop by itself
STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGUSR1)  # SIGUSR1: the timeout


class Limits(Protocol):
    """The limits a supervisor enforces (``app.jobs.RunLimits``): ``timeout`` in seconds, 0 for
    never (a memory limit is the child's own to apply)."""

    @property
    def timeout(self) -> float: ...


@dataclass(frozen=True)
class Work:
    """What the supervised child does, for the messages and the cleanup: ``subject`` (the
    model) and ``target`` are named in messages, ``activity`` says what it does (``("compile",
    "compiling")``), and the partial directory of ``output`` (a bundle) is removed if it is
    killed."""

    subject: str
    target: str
    output: str | None = None
    activity: tuple[str, str] = ("compile", "compiling")


def run_supervised(
    body: Callable[[], int],
    limits: Limits,
    work: Work,
    commit_guards: list | None = None,
    commit_claims: list | None = None,
) -> int:
    """``body()`` in a child process, supervised: a crash inside TVM is reported, not
    inherited, and a run that hangs (``limits.timeout``) or is interrupted is stopped — within
    ``STOP_WAIT`` seconds wherever it is, unless it has begun to commit its bundle
    (``stopping.StopLatch``); the child dies with this process (``compile``, ``bisect``). In
    the child the lifeline's check joins ``commit_guards`` and the latch's claim joins
    ``commit_claims`` (the bundle writer's), so it never commits after its parent died or
    stopped it."""
    sys.stdout.flush()
    sys.stderr.flush()
    # Signals wait until each process has its handlers (no window where one is lost).
    signal.pthread_sigmask(signal.SIG_BLOCK, STOP_SIGNALS)
    err_r, err_w = os.pipe()
    from tvm_explorer.supervise.lifeline import Lifeline
    from tvm_explorer.supervise.stopping import StopLatch

    lifeline = Lifeline()  # the child dies with this process and never commits after it
    latch = StopLatch()
    pid = os.fork()
    if pid == 0:  # child
        code = 1
        try:
            os.close(err_r)
            os.dup2(err_w, 2)
            os.close(err_w)
            lifeline.attach_child(GRACE)
            if commit_guards is not None:
                commit_guards.append(lifeline.check)
            if commit_claims is not None:
                commit_claims.append(latch.claim_commit)
            _mark_tvm_logging()
            code = body()
        finally:
            try:
                sys.stdout.flush()
                sys.stderr.flush()
            finally:
                os._exit(code)
    lifeline.hold_in_parent()
    os.close(err_w)
    try:
        return _supervise(limits.timeout, work, pid, _ChildErrors(err_r), latch)
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
    CHATTER = re.compile(rb"^(\[\d\d:\d\d:\d\d\] \S+\.(?:cc|h|cpp):\d+: |" + re.escape(TVM_LOG_PREFIX.encode()) + rb")")

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


def _supervise(timeout: float, work: Work, pid: int, errors: _ChildErrors, latch) -> int:
    """Wait for the compiling child; forward interrupts, enforce the timeout, and kill it if
    it does not stop within STOP_WAIT seconds (GRACE once it commits). Exactly one message
    reaches the user."""
    state: dict[str, Any] = {"stop": None, "kill_at": None, "killed": False, "at_once": False}

    def stop_deadline(now: float) -> float:
        # The child stops itself where it runs Python; inside a C++ pass it cannot.
        state["at_once"] = latch.claim_stop()
        return now + (STOP_WAIT if state["at_once"] else GRACE)

    def forward(signum, _frame):
        if state["stop"] is None:
            state["stop"] = signal.Signals(signum).name
            state["kill_at"] = stop_deadline(time.monotonic())
        _signal_child(pid, signum)

    signal.signal(signal.SIGTERM, forward)
    signal.signal(signal.SIGINT, forward)  # from a terminal the child gets Ctrl-C as well
    signal.signal(signal.SIGUSR1, signal.SIG_IGN)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, STOP_SIGNALS)
    deadline = time.monotonic() + timeout if timeout and timeout > 0 else None
    timed_out = False
    while True:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            break
        now = time.monotonic()
        if deadline is not None and now >= deadline and not timed_out and state["stop"] is None:
            timed_out = True
            state["kill_at"] = stop_deadline(now)
            _signal_child(pid, signal.SIGUSR1)
        if state["kill_at"] is not None and now >= state["kill_at"] and not state["killed"]:
            state["killed"] = True
            _signal_child(pid, signal.SIGKILL)
        errors.pump(0.02 if state["kill_at"] is not None else 0.05)
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
    _remove_partial(work.output, pid)
    if timed_out:
        return _fail(
            f"{work.subject}: {work.activity[0]} did not finish within {timeout:g} s (--timeout) "
            f"and was killed; no bundle was written (a previous bundle is unchanged)",
            EXIT_TIMEOUT,
        )
    if state["stop"] is not None:
        how = ""
        if state["killed"]:
            how = f", stopped within {STOP_WAIT:g} s" if state["at_once"] else " and was killed"
        return _fail(
            f"interrupted ({state['stop']}){how}; no bundle was written (a previous bundle is unchanged)",
            EXIT_INTERRUPTED,
        )
    dump = errors.save_dump()
    where = f"; TVM's crash report: {dump}" if dump else ""
    if sig not in _CRASH_SIGNALS and not dump:
        # Not a fault of TVM's: someone (or the kernel) killed the child.
        oom = " (possibly the kernel's out-of-memory killer)" if sig == "SIGKILL" else ""
        return _fail(
            f"{work.subject}: the compiling process was killed by {sig}, a signal from "
            f"outside tvm-explorer{oom}, while {work.activity[1]} for {work.target}; no bundle "
            "was written (a previous bundle is unchanged)",
            EXIT_CRASH,
        )
    return _fail(
        f"{work.subject}: TVM crashed ({sig}) while {work.activity[1]} for {work.target}; "
        f"no bundle was written (a previous bundle is unchanged){where}",
        EXIT_CRASH,
    )


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

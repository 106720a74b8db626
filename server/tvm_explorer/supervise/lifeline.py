"""The compiling child dies with the CLI that started it, and never commits after it.

``tvm-explorer compile`` forks a child to compile; if the CLI is killed outright (``kill -9``,
which it cannot forward), nothing else would stop that child, and it would replace the bundle
seconds after the caller saw the CLI die. Three things prevent that:

- on Linux, ``prctl(PR_SET_PDEATHSIG, SIGTERM)``: the kernel sends the child SIGTERM when the
  CLI dies, and the child stops as if interrupted (cleaning up its temporary directory);
- a watchdog process (forked from the child, portable): it holds the read end of a pipe whose
  only write end is the CLI's; end of file means the CLI is gone. It then sends the child
  SIGTERM, and SIGKILL after a grace period (a child stuck in C++ code that never returns to
  Python cannot take SIGTERM);
- :meth:`Lifeline.check`, run right before the bundle is swapped into place (with stop signals
  blocked): if the CLI is gone, the commit is cancelled.
"""

from __future__ import annotations

import os
import select
import signal
import sys
import time

from tvm_explorer.errors import ExplorerError

_PR_SET_PDEATHSIG = 1
_POLL = 0.2  # seconds between the watchdog's looks at its parent


def _set_parent_death_signal(signum: int) -> bool:
    """Ask Linux to send ``signum`` to this process when its parent dies."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        import ctypes
        import ctypes.util

        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
        return libc.prctl(_PR_SET_PDEATHSIG, int(signum), 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


class Lifeline:
    """Made by the CLI before it forks; each side then calls its own method."""

    def __init__(self):
        self.parent_pid = os.getpid()
        self._read, self._write = os.pipe()

    def hold_in_parent(self) -> None:
        """In the CLI after the fork: only it keeps the write end (closed when it dies)."""
        os.close(self._read)

    def attach_child(self, grace: float) -> None:
        """In the compiling child, first thing after the fork."""
        os.close(self._write)
        _set_parent_death_signal(signal.SIGTERM)
        self._start_watchdog(grace)
        if not self.parent_alive():  # died before the death signal was armed
            os.kill(os.getpid(), signal.SIGTERM)

    def parent_alive(self) -> bool:
        """True while the CLI that forked this child still runs (an orphan is re-parented)."""
        return os.getppid() == self.parent_pid

    def check(self) -> None:
        """Raise ExplorerError if the CLI is gone (a commit guard)."""
        if not self.parent_alive():
            raise ExplorerError("the tvm-explorer process that started this compile is gone; the bundle is not written")

    def _start_watchdog(self, grace: float) -> None:
        child = os.getpid()
        try:
            pid = os.fork()
        except OSError:
            return  # the death signal alone (Linux) must do
        if pid:
            os.close(self._read)
            return
        try:  # the watchdog: no Python code of the compile runs here
            _watch(self._read, child, grace)
        finally:
            os._exit(0)


def _watch(fd: int, child: int, grace: float) -> None:
    """Wait for end of file on ``fd`` (the CLI is gone) while ``child`` (our parent) lives."""
    # Stop signals are for the compile, not for us: kept blocked (the mask is inherited).
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT, signal.SIGTERM, signal.SIGUSR1})
    null = os.open(os.devnull, os.O_RDWR)
    for std in (0, 1, 2):  # holding the CLI's stderr pipe would keep the CLI waiting
        os.dup2(null, std)
    os.closerange(3, fd)
    os.closerange(fd + 1, 1 << 16)
    while os.getppid() == child:
        try:
            ready, _, _ = select.select([fd], [], [], _POLL)
        except InterruptedError:
            continue
        if ready and not os.read(fd, 1):
            break
    else:
        return  # the compile ended on its own
    if os.getppid() != child:
        return
    os.kill(child, signal.SIGTERM)
    deadline = time.monotonic() + grace
    while time.monotonic() < deadline:
        if os.getppid() != child:
            return
        time.sleep(0.05)
    if os.getppid() == child and _alive(child):
        os.kill(child, signal.SIGKILL)

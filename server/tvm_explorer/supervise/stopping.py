"""One decision, shared by the supervising CLI and its child, between stopping the child at
once and letting it commit.

A stop (the editor's Cancel, SIGTERM, Ctrl-C, ``--timeout``) must end a compile within a
second wherever it is — also inside a long pass such as FoldConstant, C++ code that takes no
Python signal until it returns. Only the supervisor can do that, by killing the child; the
bundle is written into a temporary sibling, so a kill leaves the previous bundle as it was.
The one moment a kill must not come is the swap into place (files the user keeps in the
bundle are carried across then). So the child *claims* the commit as it begins (stop signals
blocked), the supervisor *claims* the stop, under one lock shared across the fork, and
whichever comes first wins: a claimed stop makes the child's commit raise
``KeyboardInterrupt`` instead, and a claimed commit makes the supervisor wait for it.
"""

from __future__ import annotations

import multiprocessing

_RUNNING, _COMMITTING, _STOPPED = 0, 1, 2
_LOCK_WAIT = 1.0  # seconds; the other side holds the lock only for a moment, unless it died there


class StopLatch:
    """Made by the supervisor before it forks; ``claim_commit`` in the child,
    ``claim_stop`` in the supervisor."""

    def __init__(self):
        ctx = multiprocessing.get_context("fork")
        self._lock = ctx.Lock()
        self._state = ctx.RawValue("i", _RUNNING)

    def claim_commit(self) -> None:
        """In the child, as its commit begins: from here on the supervisor does not stop it
        at once. ``KeyboardInterrupt`` if the supervisor has claimed the stop already."""
        if not self._lock.acquire(timeout=_LOCK_WAIT):
            raise KeyboardInterrupt("the stop decision could not be taken; the bundle is not written")
        try:
            if self._state.value == _STOPPED:
                raise KeyboardInterrupt("interrupted before the bundle was written")
            self._state.value = _COMMITTING
        finally:
            self._lock.release()

    def claim_stop(self) -> bool:
        """In the supervisor: True if the child can no longer commit, so it may be killed
        now; False while it commits (or if the lock cannot be had: the grace then applies)."""
        if not self._lock.acquire(timeout=_LOCK_WAIT):
            return False
        try:
            if self._state.value == _COMMITTING:
                return False
            self._state.value = _STOPPED
            return True
        finally:
            self._lock.release()

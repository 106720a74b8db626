"""Background work (warm-ups after a load) gives way to requests.

CPython runs one thread at a time: a warm-up lexing documents on a worker thread takes half
the processor from a request answered meanwhile, and a request needing a symbol table of its
own took seconds instead of one. ``REQUESTS`` counts the requests being answered; work run
under ``yielding()`` stops at its ``checkpoint()`` calls while any is, and goes on after.
A message starts pausing it as soon as its bytes arrive (``arriving()``): reading, decoding
and dispatching it take several hand-overs between threads, each slowed while a warm-up
holds the interpreter.
"""

from __future__ import annotations

import contextlib
import gc
import threading
import time
from collections.abc import Callable

ARRIVAL_HOLD_S = 0.05
"""How long background work pauses after a message arrives unless a request begins (one
read, decoded and dispatched takes a few milliseconds)."""
LONGEST_HOLD_S = 0.25
"""Arrivals one after another pause background work this long at most; then it runs for
``HELD_WORK_S`` before they can pause it again: under a client sending without a pause it
still moves (at a twenty-sixth of its speed)."""
HELD_WORK_S = 0.01


class RequestGate:
    """Counts requests in flight; ``checkpoint()`` on a yielding thread waits until none is."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._busy = 0
        self._idle = threading.Event()
        self._idle.set()
        self._local = threading.local()
        self._hold_until = 0.0

    @contextlib.contextmanager
    def request(self):
        """Mark a request in flight for the duration of the block."""
        with self._lock:
            self._busy += 1
            self._idle.clear()
        try:
            yield
        finally:
            with self._lock:
                self._busy -= 1
                if self._busy == 0:
                    self._idle.set()

    def arriving(self) -> None:
        """A message is arriving from the client: background work pauses at its checkpoints
        for ``ARRIVAL_HOLD_S`` (longer if a request is then answered)."""
        self._hold_until = time.monotonic() + ARRIVAL_HOLD_S

    @contextlib.contextmanager
    def yielding(self):
        """Run the block as background work: its checkpoints wait for requests to finish."""
        self._local.yielding = True
        try:
            yield
        finally:
            self._local.yielding = False

    def checkpoint(self) -> None:
        """Wait while requests are in flight, on a thread running ``yielding()`` work only
        (a request's own thread never waits: it is the one being waited for)."""
        if getattr(self._local, "yielding", False):
            self._idle.wait()
            now = time.monotonic()
            if now - getattr(self._local, "released", 0.0) < HELD_WORK_S:
                return
            # Held until the arrivals stop, for at most ``LONGEST_HOLD_S``.
            until = min(self._hold_until, now + LONGEST_HOLD_S)
            if until <= now:
                return
            while (left := min(self._hold_until, until) - time.monotonic()) > 0:
                time.sleep(min(left, 0.005))
                self._idle.wait()
            self._local.released = time.monotonic()

    @staticmethod
    def keep_made() -> None:
        """Keep what background work made so far out of the cyclic collector (call after
        each unit of work). Warm-ups fill caches that live as long as their bundle, a few
        hundred thousand objects: each full collection walked them all, and a request that
        happened to trigger one waited 20-80 ms for it. (Cycles frozen with them are freed
        when the next load settles the heap.)

        Freed memory is not handed back here: after each document it lowered the warm-ups'
        peak (100 -> 87 MiB on a 60 MiB bundle) but requests then paid page faults to touch
        it again (p50 +0.4-1 ms, side by side); it is handed back once requests stop."""
        gc.freeze()


REQUESTS = RequestGate()


def warm_each(view, paths, work: Callable[[str], object], current: Callable[[], bool] = lambda: True) -> None:
    """Run ``work(path)`` for each of ``paths``, documents of ``view``, as background work
    (a warm-up after a load): requests answered meanwhile go first, what each document's
    work made is kept out of the collector, the texts read are not kept in the reader's
    cache (``Bundle.passing_through``: it keeps what requests read), and it stops as soon
    as ``current()`` says the bundle was replaced or forgotten meanwhile."""
    with REQUESTS.yielding(), view.bundle.passing_through():
        for path in paths:
            REQUESTS.checkpoint()
            if not current():
                return
            work(path)
            REQUESTS.keep_made()

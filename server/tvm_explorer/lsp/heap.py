"""Keep the garbage collector away from loaded bundles, and give freed memory back.

A loaded bundle is hundreds of thousands of long-lived objects (index ranges, texts, maps).
CPython's cyclic collector walks every tracked object at each full collection, and requests
that allocate a lot (an outline, thousands of reference locations) trigger those: pauses of
50-100 ms in the middle of an answer. Freezing moves everything alive after a load out of
the collector's sight; what requests allocate afterwards is collected as usual.

A load parses the bundle's index (a million short-lived objects for a large bundle) and the
warm-ups lex and drop token lists; glibc keeps freed heap for reuse, so the server's resident
memory stayed near its peak (10-20 MiB more on a 60 MiB bundle) until ``give_back``.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import functools
import gc
import time


def settle() -> None:
    """Collect, then freeze what is alive now (call after bundles were loaded or dropped).

    Unfreezing first hands the objects frozen last time back to the collector, so the cycles
    of a bundle that was replaced or forgotten since are still freed."""
    gc.unfreeze()
    gc.collect()
    gc.freeze()
    give_back()


@functools.cache
def _libc_function(name: str):
    """A function of glibc's allocator (None elsewhere: other C libraries, other systems)."""
    lib = ctypes.util.find_library("c")
    try:
        libc = ctypes.CDLL(lib) if lib else None
    except OSError:
        return None
    return getattr(libc, name, None) if libc is not None else None


_M_ARENA_MAX = -8  # glibc's mallopt parameter number


def one_heap() -> None:
    """Make every thread allocate from one heap (call before any thread starts).

    glibc gives each thread that allocates its own heap ("arena"); requests are answered on
    executor threads and warm-ups run on another, so memory freed by one thread was kept
    for that thread alone: 20 MiB more resident on a 60 MiB bundle. Threads here take turns
    holding the interpreter's lock anyway, so sharing one heap costs no waiting."""
    mallopt = _libc_function("mallopt")
    if mallopt is not None:
        mallopt(_M_ARENA_MAX, 1)


def give_back() -> None:
    """Return freed heap memory to the system (glibc's ``malloc_trim``; nothing elsewhere)."""
    trim = _libc_function("malloc_trim")
    if trim is not None:
        trim(0)


class QuietTrim:
    """Gives freed memory back once requests have stopped for ``quiet_s`` (what a burst of
    answers allocated and freed, thousands of locations each, stayed with the process).
    ``request_done(loop)`` after each request; the trim runs on the event loop, ~1 ms."""

    def __init__(self, quiet_s: float = 1.0):
        self.quiet_s = quiet_s
        self._last = 0.0
        self._pending = None

    def request_done(self, loop) -> None:
        """Note a request answered now; trim once ``quiet_s`` pass without another."""
        self._last = time.monotonic()
        if self._pending is None:
            self._pending = loop.call_later(self.quiet_s, self._when_quiet, loop)

    def _when_quiet(self, loop) -> None:
        left = self._last + self.quiet_s - time.monotonic()
        if left > 0:
            self._pending = loop.call_later(left, self._when_quiet, loop)
            return
        self._pending = None
        give_back()

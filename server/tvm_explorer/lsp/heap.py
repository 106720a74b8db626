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


def settle() -> None:
    """Collect, then freeze what is alive now (call after bundles were loaded or dropped).

    Unfreezing first hands the objects frozen last time back to the collector, so the cycles
    of a bundle that was replaced or forgotten since are still freed."""
    gc.unfreeze()
    gc.collect()
    gc.freeze()
    give_back()


@functools.cache
def _malloc_trim():
    name = ctypes.util.find_library("c")
    try:
        libc = ctypes.CDLL(name) if name else None
    except OSError:
        return None
    return getattr(libc, "malloc_trim", None) if libc is not None else None


def give_back() -> None:
    """Return freed heap memory to the system (glibc's ``malloc_trim``; nothing elsewhere)."""
    trim = _malloc_trim()
    if trim is not None:
        trim(0)

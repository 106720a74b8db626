"""Keep the garbage collector away from loaded bundles.

A loaded bundle is hundreds of thousands of long-lived objects (index ranges, texts, maps).
CPython's cyclic collector walks every tracked object at each full collection, and requests
that allocate a lot (an outline, thousands of reference locations) trigger those: pauses of
50-100 ms in the middle of an answer. Freezing moves everything alive after a load out of
the collector's sight; what requests allocate afterwards is collected as usual.
"""

from __future__ import annotations

import gc


def settle() -> None:
    """Collect, then freeze what is alive now (call after bundles were loaded or dropped).

    Unfreezing first hands the objects frozen last time back to the collector, so the cycles
    of a bundle that was replaced or forgotten since are still freed."""
    gc.unfreeze()
    gc.collect()
    gc.freeze()

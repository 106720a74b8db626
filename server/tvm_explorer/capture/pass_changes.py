"""Whether a pass changed a function: structural equality asked once per pair of objects.

Two instruments ask it after every top-level pass about the same pairs of functions: the pass
clock (costs/passclock.py: how many functions a pass changed) and the capture session (is a
new document needed). ``structural_equal`` walks whole functions, so the answer is kept
until ``forget()``; an entry holds both functions, so their handles are not reused while
it is kept. Whoever compares calls ``forget()`` when its pass is done (the memo never holds
more than one pass's functions).
"""

from __future__ import annotations

import tvm_ffi

from tvm_explorer.provenance.spans import handle

_memo: dict[tuple[int, int], tuple[object, object, bool]] = {}


def same_function(old, new) -> bool:
    """``old`` and ``new`` are the same object or structurally equal."""
    a, b = handle(old), handle(new)
    if a == b:
        return True
    got = _memo.get((a, b))
    if got is None:
        got = _memo[(a, b)] = (old, new, bool(tvm_ffi.structural_equal(old, new)))
    return got[2]


def forget() -> None:
    """Drop the kept answers (and the functions they hold)."""
    _memo.clear()

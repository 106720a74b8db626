"""``compile --memory-limit GIB``: read the option, apply it to the compiling child, and tell
a failure caused by the limit from one caused by the model.

Under an address-space limit an allocation can fail anywhere: in NumPy while the importer
converts an operator's weights (``_ArrayMemoryError``, which the importer then reports as
"operator 22 cannot be imported"), in TVM's C++ (``std::bad_alloc``), or while TVM's own
libraries are being mapped (which surfaces as an unrelated ``AttributeError``). So the
failure is attributed to the limit when an allocation failure is anywhere in the error's
chain, or when the process's peak address space reached the limit.
"""

from __future__ import annotations

import errno
import math

MIN_GIB = 0.5
"""Smallest limit accepted: Python with TVM loaded already maps about 0.46 GiB."""

_ALLOCATION_FAILURES = ("bad_alloc", "unable to allocate", "cannot allocate memory", "out of memory", "memoryerror")
_NEAR = 0.97  # a peak this close to the limit means the limit was reached


def gib_argument(text: str) -> float:
    """``--memory-limit``: a finite number of GiB, 0 for none; ValueError saying what is wrong
    with ``text``."""
    try:
        value = float(text)
    except ValueError:
        raise ValueError(f"{text!r} is not a number of GiB (use 0 for no limit)") from None
    if not math.isfinite(value) or value < 0:
        raise ValueError(f"{text!r} is not a limit: give a finite number of GiB, or 0 for no limit")
    if 0 < value < MIN_GIB:
        raise ValueError(
            f"{text} GiB is too small: Python with TVM loaded alone takes about 0.46 GiB of "
            f"address space; give at least {MIN_GIB:g}, or 0 for no limit"
        )
    return value


def apply(gib: float) -> None:
    """Cap the address space of this (compile) process, so that a model that makes TVM
    allocate without bound fails with a message instead of waking the OOM killer."""
    if not gib or gib <= 0:
        return
    try:
        import resource

        soft, hard = resource.getrlimit(resource.RLIMIT_AS)
        limit = int(min(gib, 2.0**33) * 2**30)  # 2**33 GiB: the largest rlimit there is
        if hard != resource.RLIM_INFINITY:
            limit = min(limit, hard)
        if soft == resource.RLIM_INFINITY or limit < soft:
            resource.setrlimit(resource.RLIMIT_AS, (limit, hard))
    except (ImportError, ValueError, OSError, OverflowError):
        pass


def _peak_bytes() -> int | None:
    try:
        with open("/proc/self/status", encoding="ascii", errors="replace") as fh:
            for line in fh:
                if line.startswith("VmPeak:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        return None
    return None


def _allocation_failed(first: BaseException) -> bool:
    seen = set()
    err: BaseException | None = first
    while err is not None and id(err) not in seen:
        seen.add(id(err))
        if isinstance(err, MemoryError) or (isinstance(err, OSError) and err.errno == errno.ENOMEM):
            return True
        if any(marker in str(err).lower() for marker in _ALLOCATION_FAILURES):
            return True
        err = err.__cause__ or err.__context__
    return False


def hit_limit(err: BaseException, gib: float) -> bool:
    """Whether ``err`` (raised by a compile running under ``gib``) came from the limit."""
    if not gib or gib <= 0:
        return isinstance(err, MemoryError)
    if _allocation_failed(err):
        return True
    peak = _peak_bytes()
    return peak is not None and peak >= _NEAR * gib * 2**30


def message(err: BaseException, gib: float, model: str) -> str:
    """The one line for a compile that failed at its memory limit; says what failed."""
    what = " ".join(str(err).split()) or type(err).__name__
    if len(what) > 700:
        what = what[:700] + " …"
    if model and what.startswith(f"{model}: "):
        what = what[len(model) + 2 :]
    if not gib or gib <= 0:
        return f"{model}: the compile ran out of memory ({what})"
    return (
        f"{model}: the compile ran out of memory at its --memory-limit of {gib:g} GiB "
        f"(an allocation failed: {what}); allow more with --memory-limit GIB, or 0 for no limit"
    )

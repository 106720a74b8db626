"""What ``compile --tune TRIALS [--tuning-db DIR] [--tune-only LAYERS]`` asks for (no TVM)."""

from __future__ import annotations

import os
from dataclasses import dataclass

from tvm_explorer.errors import ExplorerError

# Each builder worker imports TVM's tensor intrinsics first: 29-41 s on a loaded 2-core
# machine, so MetaSchedule's default of 30 s fails every candidate ("Build errors: N sample(s)").
DEFAULT_BUILDER_TIMEOUT = 600.0
# Not c: MetaSchedule's CPU schedules vectorize index arithmetic TVM's C generator cannot write
# ("Cannot convert type int32x32 to C type"). Not cuda yet.
TUNE_TARGETS = ("llvm",)


@dataclass(frozen=True)
class TuneRequest:
    """``trials``: MetaSchedule trials in all (0: apply the database only, tune nothing);
    ``database``: the folder of the JSON database (read, extended, reused);
    ``only``: layer names or indices whose kernels are tuned (empty: all);
    ``builder_timeout``: seconds a candidate may take to build."""

    trials: int
    database: str
    only: tuple[str, ...] = ()
    builder_timeout: float = DEFAULT_BUILDER_TIMEOUT
    seed: int = 0


def tune_request(trials: int | None, database: str | None, only: str | None, builder_timeout, target: str, output):
    """The request of the command line, or None without ``--tune``; a bad combination is one
    ExplorerError."""
    if trials is None:
        if database or only:
            raise ExplorerError("--tuning-db and --tune-only need --tune TRIALS")
        return None
    if trials < 0:
        raise ExplorerError(f"--tune {trials}: the number of trials is 0 (apply the database only) or more")
    if (target.split() or [""])[0] not in TUNE_TARGETS:
        why = " (MetaSchedule's CPU schedules vectorize what TVM's C generator cannot write)" if target == "c" else ""
        raise ExplorerError(f"--tune: tuning is supported for --target llvm, not {target!r}{why}")
    folder = database or os.path.join(os.path.dirname(os.path.abspath(output or ".")) or ".", "tuning-db")
    if os.path.exists(folder) and not os.path.isdir(folder):
        raise ExplorerError(f"--tuning-db {folder}: not a folder")
    layers = tuple(name.strip() for name in (only or "").split(",") if name.strip())
    if only is not None and not layers:
        raise ExplorerError("--tune-only: name at least one layer (names or indices, comma-separated)")
    timeout = float(builder_timeout) if builder_timeout is not None else DEFAULT_BUILDER_TIMEOUT
    if timeout <= 0:
        raise ExplorerError(f"--tune-builder-timeout {builder_timeout}: seconds, more than 0")
    return TuneRequest(trials, os.path.abspath(folder), layers, timeout)

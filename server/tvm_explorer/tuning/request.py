"""What ``compile --tune TRIALS [--tuning-db DIR] [--tune-only LAYERS]`` asks for (no TVM)."""

from __future__ import annotations

import os
from dataclasses import dataclass

from tvm_explorer.errors import ExplorerError
from tvm_explorer.remote.request import RemoteRequest

# Seconds for one candidate's build alone: each builder worker imports TVM's tensor intrinsics
# in its initializer (tuning/intrinsics.py), which no timeout counts.
DEFAULT_BUILDER_TIMEOUT = 60.0
# c: in a design space without vectorization (tuning/c_build.py); cuda: its candidates run on a
# GPU, here or a tracker's (tuning/cuda.py)
TUNE_TARGETS = ("llvm", "c", "cuda")


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
    remote: RemoteRequest | None = None  # --rpc-tracker/--rpc-key: candidates and ledger run there


def tune_request(
    trials: int | None,
    database: str | None,
    only: str | None,
    builder_timeout,
    target: str,
    output,
    remote: RemoteRequest | None = None,
    no_gpu: str | None = None,
):
    """The request of the command line, or None without ``--tune``; a bad combination is one
    ExplorerError. ``remote``: the devices of ``--rpc-tracker``/``--rpc-key`` (MetaSchedule's
    RPCRunner measures the candidates there; the ledger times the kernels there). ``no_gpu``:
    for cuda, why no CUDA GPU is here (None: one is) — tuning cuda without a GPU to time the
    candidates on is refused before anything is compiled."""
    if trials is None:
        if database or only:
            raise ExplorerError("--tuning-db and --tune-only need --tune TRIALS")
        return None
    if trials < 0:
        raise ExplorerError(f"--tune {trials}: the number of trials is 0 (apply the database only) or more")
    if (target.split() or [""])[0] not in TUNE_TARGETS:
        raise ExplorerError(f"--tune: tuning is supported for --target llvm, c and cuda, not {target!r}")
    folder = database or os.path.join(os.path.dirname(os.path.abspath(output or ".")) or ".", "tuning-db")
    if os.path.exists(folder) and not os.path.isdir(folder):
        raise ExplorerError(f"--tuning-db {folder}: not a folder")
    layers = tuple(name.strip() for name in (only or "").split(",") if name.strip())
    if only is not None and not layers:
        raise ExplorerError("--tune-only: name at least one layer (names or indices, comma-separated)")
    timeout = float(builder_timeout) if builder_timeout is not None else DEFAULT_BUILDER_TIMEOUT
    if timeout <= 0:
        raise ExplorerError(f"--tune-builder-timeout {builder_timeout}: seconds, more than 0")
    if remote is not None and remote.rpc is not None:
        raise ExplorerError(
            f"--tune with --rpc {remote.rpc[0]}:{remote.rpc[1]}: MetaSchedule's RPCRunner asks an RPC tracker for its "
            "devices and cannot use a single server; register the server with a tracker (python -m "
            "tvm.exec.rpc_server --tracker HOST:PORT --key KEY) and give --rpc-tracker HOST:PORT --rpc-key KEY"
        )
    if (target.split() or [""])[0] == "cuda" and trials > 0 and remote is None and no_gpu:
        raise ExplorerError(
            f"--tune for cuda times each candidate on a GPU: none here ({no_gpu}); give --rpc-tracker HOST:PORT "
            "--rpc-key KEY of a device with one, or --tune 0 to apply an existing database"
        )
    return TuneRequest(trials, os.path.abspath(folder), layers, timeout, remote=remote)

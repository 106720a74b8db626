"""What a CompileJob asks to measure, as the requests of the rooms that measure:
``costs.request.ProfileRequest`` (``--profile``) and ``remote.request.RemoteRequest`` (where it
runs: here, or on devices through TVM's RPC)."""

from __future__ import annotations

from tvm_explorer.app.jobs import CompileJob
from tvm_explorer.errors import ExplorerError


def remote_request(job: CompileJob):
    """The RemoteRequest of ``job`` (None: measure here); raises ExplorerError (RemoteError for a
    missing cross compiler) before anything is compiled."""
    from tvm_explorer.remote.request import from_options

    measure = job.measure
    remote = measure.remote
    request = from_options(
        remote.rpc, remote.rpc_tracker, remote.rpc_key, remote.rpc_timeout, remote.devices, remote.cc
    )
    if request is None:
        return None
    if not measure.profile and not (measure.numerics or measure.numerics_unfused) and job.tune.trials is None:
        raise ExplorerError(
            "--rpc/--rpc-tracker run the model on a device: add --profile (run time), --numerics (error per layer) "
            "and/or --tune TRIALS (MetaSchedule's candidates)"
        )
    if (
        job.target.split()[:1] == ["cuda"]
        and not measure.profile
        and not (measure.numerics or measure.numerics_unfused)
    ):
        # --tune alone: MetaSchedule's RPCRunner and the ledger run the CUDA kernels on the
        # device's GPU (their host side built for this machine's CPU, docs/tuning.md)
        return request
    from tvm_explorer.remote.cross import resolve

    resolve(job.target, request.cc)  # a missing cross compiler is said now, not after the build
    return request


def profile_request(job: CompileJob):
    """The ProfileRequest of ``job``, or None."""
    from tvm_explorer.costs.request import ProfileRequest

    measure = job.measure
    if not measure.profile:
        return None
    return ProfileRequest(
        repeat=measure.repeat,
        inputs=measure.inputs,
        remote=remote_request(job),
        required=measure.profile_required,
    )

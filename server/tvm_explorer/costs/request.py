"""What ``--profile`` asks for (kept free of TVM so that the CLI starts fast)."""

from __future__ import annotations

from dataclasses import dataclass

from tvm_explorer.remote.request import RemoteRequest

DEFAULT_REPEAT = 10


@dataclass
class ProfileRequest:
    """``--profile [--repeat N] [--inputs FILE.npz]``.

    ``timer``: ``"auto"`` times CPU targets in process CPU time and CUDA with TVM's device
    timer (CUDA events) in a fresh process; ``"device"`` uses the device-timer path for CPU
    targets too (a wall clock there; how the CUDA path is tested on machines without a GPU).
    """

    repeat: int = DEFAULT_REPEAT
    inputs: str | None = None
    timer: str = "auto"
    remote: RemoteRequest | None = None  # measure on devices over TVM's RPC (docs/costs.md)
    # ``tvm-explorer profile``: a bundle is replaced only with a measurement (a bundle whose
    # costs.json says "failed" must not take the place of one that was measured).
    required: bool = False


def as_request(profile) -> ProfileRequest | None:
    """``profile=`` of the Python API: None/False, True (defaults), a repeat count, or a
    ProfileRequest."""
    if profile is None or profile is False:
        return None
    if profile is True:
        return ProfileRequest()
    if isinstance(profile, int):
        return ProfileRequest(repeat=profile)
    if isinstance(profile, ProfileRequest):
        return profile
    raise TypeError(f"profile={profile!r}: expected True, a repeat count or a ProfileRequest")

"""The commands as typed jobs: what ``cli/`` parses a command line into and hands down
(``compile``, ``profile``, ``bisect``, ``reduce``), so that no room below the command line reads
an argument namespace. A job holds values only; the checks that need the model or TVM run
where the job is carried out."""

from __future__ import annotations

from dataclasses import dataclass, field

from tvm_explorer.costs.request import DEFAULT_REPEAT
from tvm_explorer.frontends.input_shapes import InputShape
from tvm_explorer.remote.request import DEFAULT_TIMEOUT as DEFAULT_RPC_TIMEOUT

DEFAULT_TIMEOUT = 1800.0  # seconds; a compile of the largest test model takes well under 60 s


@dataclass(frozen=True)
class RunLimits:
    """``--timeout`` (seconds, 0: never) and ``--memory-limit`` (GiB of address space, 0: none)
    of a run."""

    timeout: float = DEFAULT_TIMEOUT
    memory_limit: float = 0.0


@dataclass(frozen=True)
class RemoteOptions:
    """Where ``--profile``/``--numerics`` run: here (no ``rpc``/``rpc_tracker``) or on devices
    through TVM's RPC (``--rpc``, ``--rpc-tracker`` …, docs/costs.md)."""

    rpc: str | None = None
    rpc_tracker: str | None = None
    rpc_key: str | None = None
    rpc_timeout: float = DEFAULT_RPC_TIMEOUT
    devices: int = 1
    cc: str | None = None


@dataclass(frozen=True)
class MeasureOptions:
    """What ``compile --profile``/``--numerics`` and ``profile`` measure, and on what inputs."""

    profile: bool = False
    profile_required: bool = False  # ``profile``: the bundle is replaced only with a measurement
    repeat: int = DEFAULT_REPEAT
    inputs: str | None = None
    numerics: bool = False  # ``--numerics-unfused`` implies it (set by whoever builds the job)
    numerics_unfused: bool = False
    reference: str | None = None
    remote: RemoteOptions = field(default_factory=RemoteOptions)


@dataclass(frozen=True)
class TuneOptions:
    """``compile --tune TRIALS [--tuning-db DIR] [--tune-only LAYERS] [--tune-builder-timeout S]``
    as given (``tuning/request.py`` checks them and makes the TuneRequest)."""

    trials: int | None = None  # None: no --tune
    database: str | None = None
    only: str | None = None
    builder_timeout: float | None = None


@dataclass(frozen=True)
class CompileJob:
    """``tvm-explorer compile MODEL -o BUNDLE`` (and the rebuild ``profile`` runs)."""

    model: str
    output: str | None
    target: str = "c"
    limits: RunLimits = field(default_factory=RunLimits)
    exact_origins: bool = False
    schedule_records: bool = True
    fill_spans: bool = True  # False: --no-spans, a plain stock TVM compile, no bundle
    progress: str = "auto"
    pipeline: str | None = None
    input_shapes: tuple[InputShape, ...] = ()
    sass: str | None = None
    tune: TuneOptions = field(default_factory=TuneOptions)
    trust_pickle: bool = False
    in_process: bool = False  # run in this process, not in a supervised child (tests)
    measure: MeasureOptions = field(default_factory=MeasureOptions)


@dataclass(frozen=True)
class ProfileJob:
    """``tvm-explorer profile BUNDLE``: measure a bundle again by rebuilding it from the model
    its manifest records (``app/profile.py`` turns it into a CompileJob)."""

    bundle: str
    model: str | None = None  # --model: instead of the path the manifest records
    target: str | None = None  # --target: instead of the bundle's
    limits: RunLimits = field(default_factory=RunLimits)
    progress: str = "auto"
    pipeline: str | None = None
    trust_pickle: bool = False
    measure: MeasureOptions = field(default_factory=lambda: MeasureOptions(profile=True, profile_required=True))


@dataclass(frozen=True)
class BisectJob:
    """``tvm-explorer bisect MODEL``: the first pass after which the model computes something
    else."""

    model: str
    target: str = "llvm"
    output: str | None = None  # also write the bundle, with bisect.json
    pipeline: str | None = None
    inputs: str | None = None
    reference: str | None = None
    json: bool = False
    progress: str = "auto"
    limits: RunLimits = field(default_factory=RunLimits)
    trust_pickle: bool = False
    in_process: bool = False


@dataclass(frozen=True)
class ReduceJob:
    """``tvm-explorer reduce MODEL -o SMALL``: the smallest sub-model that breaks TVM the same
    way (``limits`` hold for each probe)."""

    model: str
    output: str
    until: str | None = None
    target: str = "c"
    pipeline: str | None = None
    reference: str | None = None
    jobs: int = 1
    limits: RunLimits = field(default_factory=lambda: RunLimits(timeout=300.0))
    max_probes: int = 1000
    progress: str = "auto"

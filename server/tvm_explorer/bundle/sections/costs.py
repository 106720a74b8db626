"""``costs.json``: the costs of a compiled model, per layer, kernel, kernel call and pass.

Built once while compiling (``costs/assemble.py``), validated by every reader (``validate``). The shape
is documented in docs/bundle-format.md; docs/costs.md says what each number measures.
"""

from __future__ import annotations

from typing import TypedDict, cast

from tvm_explorer.bundle import fields as f
from tvm_explorer.bundle.sections import Section

COSTS_FILE = "costs.json"
SCHEMA_VERSION = 1
SPLIT_RULE = "work"  # a shared kernel call's time is split by its TIR work per layer


# -- the validated shape ---------------------------------------------------------------------
# What ``validate`` accepts, no more: a key it allows to be null may also be missing (``total=False``
# parts), a value it does not check is ``object``. The documents stay plain dicts at run time.


class CostDevice(TypedDict, total=False):
    """One device of ``profile.remote.devices``, as it described itself."""

    address: str
    key: str | None
    triple: str | None
    cpu: str | None
    threads: int | None
    description: str


class CostRemote(TypedDict, total=False):
    """``profile.remote``: the devices the profile ran on (TVM RPC)."""

    via: str  # "rpc" | "tracker"
    address: str  # the server's or the tracker's host:port
    key: str | None
    devices: list[CostDevice]
    combined: str | None  # "median" over several devices


class CostNvtx(TypedDict):
    """``profile.nvtx``: the NVTX ranges named after layers that a device-timer run opened."""

    domain: str
    library: str | None  # "nvtx 0.2.17"; None: not installed (``reason`` says so)
    ranges: int  # over every instrumented run
    kernels: int  # kernels whose calls carry their layers' names
    reason: str | None


class _ProfileRequired(TypedDict):
    status: str


class CostProfile(_ProfileRequired, total=False):
    """``profile``: how (or why not) the calls were timed."""

    reason: str | None
    inputs: str | None
    device: str | None
    device_name: str | None
    clock: str | None
    split: str | None
    plain_run_ms: float | None
    plain_run_min_ms: float | None
    plain_run_max_ms: float | None
    runtime_ms: float | None
    wall_ms: float | None
    plain_wall_ms: float | None
    total_min_ms: float | None
    repeat: int | None
    warmup: int | None
    total_runs_ms: list[float]  # the sum of all calls of each instrumented run, in run order
    where: str | None  # "host" | "remote" (absent in bundles written before remote runs)
    remote: CostRemote | None
    device_total_ms: list[float | None] | None  # several devices: each one's total
    c_fixes: list[str]
    nvtx: CostNvtx  # device timer runs: the NVTX ranges opened per layer call
    """The ``#define`` lines TVM's C was compiled with (target ``c``; absent when none)."""


class _LayerRequired(TypedDict):
    id: int
    subgraph: int
    op_index: int
    opcode: str
    name: str
    code_lines: int
    workspace_bytes: int
    kernels: list[str]


class CostLayer(_LayerRequired, total=False):
    """One entry of ``layers`` (model order; ``id`` as in ``index.json``)."""

    shared_code_lines: int
    kernel_count: int
    shared_kernels: list[str]
    time_ms: float | None
    share: float | None
    flops: float | None
    time_runs_ms: list[float]  # the layer's time in each instrumented run, in run order
    device_time_ms: list[float | None]  # measured on several devices: the time on each


class _KernelRequired(TypedDict):
    name: str
    layers: list[int]
    calls: int
    code_lines: int
    workspace_bytes: int


class CostKernel(_KernelRequired, total=False):
    """One entry of ``kernels``."""

    total_lines: int | None
    time_ms: float | None
    share: float | None
    flops: float | None


class _PassRequired(TypedDict):
    index: int
    name: str


class CostPass(_PassRequired, total=False):
    """One entry of ``passes`` (mirrors the manifest's ``passes`` by ``index``)."""

    stage: str | None
    ms: float | None
    changed_functions: int | None


class _CostsRequired(TypedDict):
    schema_version: int  # SCHEMA_VERSION
    profile: CostProfile
    layers: list[CostLayer]
    kernels: list[CostKernel]
    passes: list[CostPass]
    calls: list[object]  # entries not validated: the editor does not read them


class CostsDocument(_CostsRequired, total=False):
    """A validated ``costs.json``."""

    total_ms: float | None
    code_kind: str | None
    target: str | None
    totals: dict[str, float | None] | None


def clock_label(profile: CostProfile) -> str:
    """How the calls of a profile were timed, in words (``CPU time`` on the CPU targets)."""
    if profile.get("clock") == "device_timer":
        return "GPU time (CUDA events)" if profile.get("device") == "cuda" else "wall time (device timer)"
    return "CPU time"


def measured_on(profile: CostProfile) -> str | None:
    """``measured on znver5 (key 'board-a'), median of 2 devices`` for a profile taken on
    remote devices; None for one taken here."""
    remote = profile.get("remote")
    if not remote:
        return None
    devices = remote.get("devices") or []
    names: list[str] = []
    for d in devices:
        name = d.get("cpu") or d.get("description") or "an unnamed device"
        if name not in names:
            names.append(name)
    key = remote.get("key")
    who = f"key {key}" if key else remote.get("address", "?")
    text = f"measured on {', '.join(names) or 'a remote device'} ({who})"
    if len(devices) > 1:
        text += f", median of {len(devices)} devices"
    return text


# -- reading ------------------------------------------------------------------------------
_PROFILE_STRINGS = ("reason", "inputs", "device", "device_name", "clock", "split", "where")
PROFILE_NUMBERS = (  # the profile's figures (several devices: each the median of theirs)
    "plain_run_ms",
    "plain_run_min_ms",
    "plain_run_max_ms",
    "runtime_ms",
    "wall_ms",
    "plain_wall_ms",
    "total_min_ms",
)


def _check_profile(profile) -> None:
    f.obj(profile, "'profile'")
    f.string(profile.get("status"), "'profile': 'status'")
    for key in _PROFILE_STRINGS:
        f.string(profile.get(key), f"'profile': '{key}'", nullable=True)
    for key in PROFILE_NUMBERS:
        f.number(profile.get(key), f"'profile': '{key}'")
    for key in ("repeat", "warmup"):
        f.integer(profile.get(key), f"'profile': '{key}'", nullable=True)
    if "total_runs_ms" in profile:
        _check_runs(profile["total_runs_ms"], "'profile': 'total_runs_ms'")
    if profile.get("device_total_ms") is not None:
        _numbers(profile["device_total_ms"], "'profile': 'device_total_ms'")
    remote = profile.get("remote")
    if remote is not None:
        f.obj(remote, "'profile': 'remote'")
        for key in ("via", "address", "key", "combined"):
            f.string(remote.get(key), f"'profile': 'remote': '{key}'", nullable=True)
        devices = remote.get("devices")
        if not isinstance(devices, list):
            raise ValueError("'profile': 'remote': 'devices' must be a list")
        for i, d in enumerate(devices):
            where = f"'profile': 'remote': device {i}"
            f.obj(d, where)
            for key in ("address", "key", "triple", "cpu", "description"):
                f.string(d.get(key), f"{where}: '{key}'", nullable=True)
            f.integer(d.get("threads"), f"{where}: 'threads'", nullable=True)
    if "c_fixes" in profile:
        f.strings(profile["c_fixes"], "'profile': 'c_fixes'")
    if "nvtx" in profile:
        nvtx = f.obj(profile["nvtx"], "'profile': 'nvtx'")
        f.string(nvtx.get("domain"), "'profile': 'nvtx': 'domain'")
        for key in ("library", "reason"):
            f.string(nvtx.get(key), f"'profile': 'nvtx': '{key}'", nullable=True)
        for key in ("ranges", "kernels"):
            f.integer(nvtx.get(key), f"'profile': 'nvtx': '{key}'")


def _check_runs(runs, where: str) -> None:
    """A list of per-run times (written only with a measurement; older bundles have none)."""
    if not isinstance(runs, list):
        raise ValueError(f"{where} must be a list of numbers")
    for i, value in enumerate(runs):
        f.number(value, f"{where}[{i}]", nullable=False)


def _numbers(values, where: str) -> None:
    if not isinstance(values, list):
        raise ValueError(f"{where} must be a list of numbers")
    for v in values:
        f.number(v, where)


def _check_layer(lay, where: str, layer_count: int) -> None:
    f.obj(lay, where)
    f.integer(lay.get("id"), f"{where}: 'id'", high=max(layer_count - 1, 0))
    if lay["id"] >= layer_count:
        raise ValueError(f"{where}: 'id' names a layer the bundle does not have")
    for key in ("subgraph", "op_index", "code_lines", "workspace_bytes"):
        f.integer(lay.get(key), f"{where}: '{key}'")
    for key in ("shared_code_lines", "kernel_count"):
        if key in lay:
            f.integer(lay[key], f"{where}: '{key}'")
    for key in ("opcode", "name"):
        f.string(lay.get(key), f"{where}: '{key}'")
    for key in ("time_ms", "share", "flops"):
        f.number(lay.get(key), f"{where}: '{key}'")
    if "time_runs_ms" in lay:
        _check_runs(lay["time_runs_ms"], f"{where}: 'time_runs_ms'")
    f.strings(lay.get("kernels"), f"{where}: 'kernels'")
    if lay.get("device_time_ms") is not None:
        _numbers(lay["device_time_ms"], f"{where}: 'device_time_ms'")
    if "shared_kernels" in lay:
        f.strings(lay["shared_kernels"], f"{where}: 'shared_kernels'")


def _check_kernel(k, where: str, layer_count: int) -> None:
    f.obj(k, where)
    f.string(k.get("name"), f"{where}: 'name'")
    layers = k.get("layers")
    if not (
        isinstance(layers, list)
        and all(isinstance(x, int) and not isinstance(x, bool) and 0 <= x < layer_count for x in layers)
    ):
        raise ValueError(f"{where}: 'layers' must be a list of the bundle's layer ids")
    for key in ("calls", "code_lines", "workspace_bytes"):
        f.integer(k.get(key), f"{where}: '{key}'")
    if "total_lines" in k:
        f.integer(k["total_lines"], f"{where}: 'total_lines'", nullable=True)
    for key in ("time_ms", "share", "flops"):
        f.number(k.get(key), f"{where}: '{key}'")


def _check_pass(p, where: str) -> None:
    f.obj(p, where)
    f.integer(p.get("index"), f"{where}: 'index'")
    f.string(p.get("name"), f"{where}: 'name'")
    f.string(p.get("stage"), f"{where}: 'stage'", nullable=True)
    f.number(p.get("ms"), f"{where}: 'ms'")
    f.integer(p.get("changed_functions"), f"{where}: 'changed_functions'", nullable=True)


def validate(data, layer_count: int) -> None:
    """Raise ValueError saying which field of a ``costs.json`` document is wrong: every
    value a reader formats or adds up has its type and range checked here, once."""
    f.document(data, SCHEMA_VERSION)
    f.number(data.get("total_ms"), "'total_ms'")
    f.string(data.get("code_kind"), "'code_kind'", nullable=True)
    f.string(data.get("target"), "'target'", nullable=True)
    _check_profile(data.get("profile"))
    if data.get("totals") is not None:
        for key, value in f.obj(data["totals"], "'totals'").items():
            f.number(value, f"'totals': '{key}'")
    for key in ("layers", "kernels", "passes", "calls"):
        if not isinstance(data.get(key), list):
            raise ValueError(f"'{key}' must be a list")
    for i, lay in enumerate(data["layers"]):
        _check_layer(lay, f"layer entry {i}", layer_count)
    for i, k in enumerate(data["kernels"]):
        _check_kernel(k, f"kernel entry {i}", layer_count)
    for i, p in enumerate(data["passes"]):
        _check_pass(p, f"pass entry {i}")


def _check(data, layers) -> CostsDocument:
    validate(data, len(layers))
    return cast(CostsDocument, data)


SECTION = Section(COSTS_FILE, "costs file", _check, damage_raises=True)

"""``tuning.json``: the tuning ledger of a ``compile --tune`` (docs/tuning.md).

Per kernel (a fused PrimFunc) and the layers it computes: ``tuned`` (the database's schedule
was applied), ``untuned`` (no trials were spent on it), ``miss`` (tuned or asked for, but the
database had nothing that applied, with the reason) or ``build_failed`` (every candidate failed
to build; the builder's own text is kept); the trials spent; the kernel's time with TVM's
default schedule and with the tuned one, timed side by side in the same run. Written by
``tuning/ledger.py``, validated by every reader.
"""

from __future__ import annotations

from typing import TypedDict, cast

from tvm_explorer.bundle import fields as f
from tvm_explorer.bundle.sections import Section

TUNING_FILE = "tuning.json"
SCHEMA_VERSION = 1
STATES = ("tuned", "untuned", "miss", "build_failed")
NO_RECORD = "holds no candidate that built and ran"  # a miss's reason (tuning/ledger.py)


class TuningError(ValueError):
    """``tuning.json`` does not have the documented shape."""


class TunedKernel(TypedDict):
    kernel: str
    layers: list[int]
    state: str
    reason: str | None
    reused: bool
    trials: int
    build_failures: int
    run_failures: int
    errors: list[str]
    best_measured_us: float | None
    default_us: float | None
    tuned_us: float | None
    speedup: float | None
    trace: str | None


class Verdict(TypedDict):
    level: str  # ok | warning | error
    message: str


class _TuningOptional(TypedDict, total=False):
    candidates_ran_on: str  # where MetaSchedule ran the candidates (absent in older bundles)
    times_not_measured: str  # why no kernel was timed (cuda without a GPU): no time is made up


class TuningDocument(_TuningOptional):
    version: int
    target: str
    database: str
    trials_requested: int
    tuning_seconds: float
    builder_timeout: float
    timed_with: str  # where the ledger timed the kernels: "llvm" (here) or the device
    kernels: list[TunedKernel]
    verdict: Verdict


def likely_cause(doc: TuningDocument) -> Verdict:
    """Loud when tuning did nothing: the database matched no kernel, or every build failed,
    with the likely cause read from what the builder said."""
    kernels = doc["kernels"]
    tuned = [k for k in kernels if k["state"] == "tuned"]
    failed = [k for k in kernels if k["state"] == "build_failed"]
    missed = [k for k in kernels if k["state"] == "miss"]
    if (
        kernels
        and failed
        and not tuned
        and len(failed) + len(missed) == len([k for k in kernels if k["state"] != "untuned"])
    ):
        errors = " ".join(e for k in failed for e in k["errors"]).lower()
        if not any(k["build_failures"] for k in failed):
            return {"level": "error", "message": _nothing_ran(doc, failed)}
        if "timeout" in errors:
            cause = (
                f"the builder timed out (--tune-builder-timeout, {doc['builder_timeout']:g} s here): "
                "a candidate took longer than that to build; give it more seconds"
            )
        elif "no module named" in errors:
            cause = "a package the builder needs is missing: pip install 'tvm-explorer[tune]'"
        else:
            cause = "see each kernel's builder errors below"
        return {
            "level": "error",
            "message": f"every candidate of {len(failed)} kernel(s) failed to build; likely cause: {cause}",
        }
    if kernels and missed and not tuned:
        known = [k for k in missed if NO_RECORD in (k["reason"] or "")]
        cause = (
            "it was built for another shape or model, or tuned before FuseOps/FuseTIR (tvm-explorer tunes after them)"
        )
        if known:
            cause = (
                f"it knows {len(known)} of them but holds no candidate of theirs that ran (every one tuned into it "
                "failed: see the compile that tuned them)"
                + ("" if len(known) == len(missed) else f"; the others: {cause}")
            )
        return {
            "level": "error",
            "message": f"the database {doc['database']} matched none of the {len(kernels)} kernels; likely cause: {cause}",
        }
    if failed or missed:
        return {
            "level": "warning",
            "message": f"{len(tuned)} of {len(kernels)} kernels tuned; {len(missed)} database miss(es), {len(failed)} failed to build",
        }
    if not tuned:
        return {"level": "warning", "message": "no kernel was tuned (no trials spent and nothing in the database)"}
    return {"level": "ok", "message": f"{len(tuned)} of {len(kernels)} kernels tuned"}


def _nothing_ran(doc: TuningDocument, failed: list[TunedKernel]) -> str:
    """Every candidate built and none ran: tuning did nothing; the device's own words."""
    where = doc.get("candidates_ran_on") or "the device"
    said = next((e.removeprefix("run: ").strip().splitlines()[-1] for k in failed for e in k["errors"] if e), "")
    low = " ".join(e for k in failed for e in k["errors"]).lower()
    if doc["target"].split()[:1] == ["cuda"] and "cuda" in low:
        cause = "the device cannot run CUDA (no GPU or no CUDA runtime there): give the --rpc-key of devices with a GPU"
    else:
        cause = "see each kernel's errors below"
    return (
        f"tuning did nothing: every candidate of {len(failed)} kernel(s) was built here and failed to run on {where}; "
        f"the device said: {said[:300]}; likely cause: {cause}"
    )


def validate(data, layer_count: int) -> TuningDocument:
    """``data`` checked against the documented shape (``layer_count``: layer ids are below it)."""
    E = TuningError
    data = f.obj(data, "tuning.json", E)
    f.integer(data.get("version"), "'version'", E, low=SCHEMA_VERSION, high=SCHEMA_VERSION)
    for key in ("target", "database", "timed_with"):
        f.string(data.get(key), f"'{key}'", E)
    for key in ("candidates_ran_on", "times_not_measured"):
        if key in data:
            f.string(data.get(key), f"'{key}'", E)
    f.integer(data.get("trials_requested"), "'trials_requested'", E)
    f.number(data.get("tuning_seconds"), "'tuning_seconds'", E, nullable=False)
    f.number(data.get("builder_timeout"), "'builder_timeout'", E, nullable=False)
    kernels = data.get("kernels")
    if not isinstance(kernels, list):
        raise E("'kernels' must be a list")
    for i, k in enumerate(kernels):
        where = f"'kernels'[{i}]"
        f.obj(k, where, E)
        f.string(k.get("kernel"), f"{where}: 'kernel'", E)
        layers = k.get("layers")
        if not isinstance(layers, list):
            raise E(f"{where}: 'layers' must be a list")
        for lay in layers:
            f.integer(lay, f"{where}: 'layers'", E, high=max(0, layer_count - 1))
        if k.get("state") not in STATES:
            raise E(f"{where}: 'state' must be one of {', '.join(STATES)}")
        f.string(k.get("reason"), f"{where}: 'reason'", E, nullable=True)
        f.boolean(k.get("reused"), f"{where}: 'reused'", E)
        for key in ("trials", "build_failures", "run_failures"):
            f.integer(k.get(key), f"{where}: '{key}'", E)
        f.strings(k.get("errors"), f"{where}: 'errors'", E)
        for key in ("best_measured_us", "default_us", "tuned_us", "speedup"):
            f.number(k.get(key), f"{where}: '{key}'", E)
        f.string(k.get("trace"), f"{where}: 'trace'", E, nullable=True)
    verdict = f.obj(data.get("verdict"), "'verdict'", E)
    if verdict.get("level") not in ("ok", "warning", "error"):
        raise E("'verdict': 'level' must be ok, warning or error")
    f.string(verdict.get("message"), "'verdict': 'message'", E)
    return cast(TuningDocument, data)


STATE_WORDS = {"tuned": "tuned", "untuned": "untuned", "miss": "database miss", "build_failed": "build failed"}


def state_word(kernel: TunedKernel) -> str:
    """What tuning did to a kernel, in words: ``build_failed`` where every candidate built and
    none ran (a device that refused them all) is ``run failed``."""
    if kernel["state"] == "build_failed" and not kernel["build_failures"] and kernel["run_failures"]:
        return "run failed"
    return STATE_WORDS[kernel["state"]]


def _kernels_by_layer(doc: TuningDocument) -> dict[int, list[TunedKernel]]:
    kernels_of: dict[int, list[TunedKernel]] = {}
    for k in doc["kernels"]:
        for lid in k["layers"]:
            kernels_of.setdefault(lid, []).append(k)
    return kernels_of


def layer_states(doc: TuningDocument) -> dict[int, tuple[str, float | None]]:
    """Layer id -> what tuning did to its kernels (``tuned``, ``untuned``, ``database miss``,
    ``build failed``, ``run failed``, or ``mixed`` when its kernels differ) and, tuned, the smallest speedup
    of its kernels (default time ÷ tuned time, measured side by side)."""
    out: dict[int, tuple[str, float | None]] = {}
    for lid, kernels in _kernels_by_layer(doc).items():
        words = {state_word(k) for k in kernels}
        if len(words) > 1:
            out[lid] = ("mixed", None)
            continue
        speedups = [k["speedup"] for k in kernels if k["speedup"] is not None]
        word = words.pop()
        out[lid] = (word, min(speedups) if word == "tuned" and speedups else None)
    return out


SLOWER = "tuned, slower than default"


def layer_category(word: str, speedup: float | None) -> str:
    """A layer's tuning state as a graph overlay's category: ``tuned`` layers whose kernels
    were measured slower than TVM's default schedule side by side are told apart, since the
    default would win that time back (tuning/left.py)."""
    return SLOWER if word == "tuned" and speedup is not None and speedup < 1 else word


def kernel_line(kernel: TunedKernel) -> str:
    """One kernel's tuning in a line: ``matmul1 tuned (reused): 5.33 µs, default 0.10 µs
    (0.02×, measured side by side)``."""
    word = state_word(kernel) + (" (reused)" if kernel["reused"] and kernel["state"] == "tuned" else "")
    tuned, default = kernel["tuned_us"], kernel["default_us"]
    if kernel["state"] == "tuned" and tuned is not None and default is not None:
        ratio = f" ({kernel['speedup']:.2f}×, measured side by side)" if kernel["speedup"] is not None else ""
        return f"{kernel['kernel']} {word}: {tuned:.2f} µs, default {default:.2f} µs{ratio}"
    if default is not None:
        return f"{kernel['kernel']} {word}: default schedule {default:.2f} µs"
    return f"{kernel['kernel']} {word}"


def layer_lines(doc: TuningDocument) -> dict[int, str]:
    """Layer id -> its kernels' tuning, a line each (``kernel_line``), for a layer's panel."""
    return {lid: "\n".join(map(kernel_line, kernels)) for lid, kernels in _kernels_by_layer(doc).items()}


SECTION = Section(TUNING_FILE, "tuning ledger", lambda data, layers: validate(data, len(layers)), damage_raises=True)

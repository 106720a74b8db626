"""What ``compile`` (and ``profile``) tell the user about the bundle they wrote: the passes and
documents, coverage, costs, the memory timeline and numerics, and where to go next."""

from __future__ import annotations

from typing import TYPE_CHECKING, cast

from tvm_explorer.app.jobs import CompileJob

if TYPE_CHECKING:
    from tvm_explorer.app.compile import CompileResult
    from tvm_explorer.bundle.sections.costs import CostProfile
    from tvm_explorer.bundle.sections.memory import MemoryDocument
    from tvm_explorer.bundle.sections.tuning import TuningDocument


def compile_report(job: CompileJob, result: CompileResult, unit: str, numerics=None) -> list[str]:
    """The lines of the summary of ``result`` (a CompileResult); ``unit``: what a layer is
    called (``op`` for TFLite, ``node`` for ONNX and PyTorch); ``numerics``: the job's
    NumericsStep, if any."""
    if not job.fill_spans:
        return [
            f"{job.model}: compiled for {job.target} with stock TVM (span filling off); "
            "nothing recorded, no bundle written"
        ]
    bundle = result.bundle
    lines = [f"Bundle written: {bundle}", f"  {result.passes} passes recorded, {result.documents} documents"]
    for kind, cov in sorted(result.coverage.items()):
        lines.append(f"  generated {kind}: {cov['attributed']}/{cov['units']} computing lines attributed")
    lines += costs_report(result.costs, unit)
    lines += memory_report(result.memory, result.memory_failure, bundle)
    lines += tuning_report(result.tuning, bundle)
    lines += numerics.report() if numerics else []
    lines += [
        "Open it in an editor with the TVM Explorer language server (VS Code: docs/vscode.md):",
        f"  code {bundle}",
    ]
    code = {"c": "code/module.c", "cuda": "code/device.cu"}.get(job.target)
    if code:
        lines.append(f"Ask where a line came from:\n  tvm-explorer origins {bundle} {code}:LINE")
    return lines


def costs_report(costs: dict | None, unit: str = "op") -> list[str]:
    """What ``compile`` says about the costs it recorded."""
    if not costs:
        return []
    profile = costs.get("profile") or {}
    if profile.get("status") == "not_requested":
        return [
            "  costs.json: static costs (code lines, workspace, FLOPs, compile time); add --profile to measure run time"
        ]
    if costs.get("total_ms") is None:
        return [f"  profile: not measured ({profile.get('reason')}); costs.json has static costs only"]
    top = max(costs["layers"], key=lambda lay: lay.get("time_ms") or 0.0, default=None)
    from tvm_explorer.bundle.sections.costs import measured_on

    on = measured_on(cast("CostProfile", profile))
    lines = [
        f"  profile: {costs['total_ms']:.3f} ms per run (median of {profile.get('repeat')})" + (f", {on}" if on else "")
    ]
    if top is not None and top.get("share") is not None:
        lines.append(
            f"  slowest layer: {unit} {top['op_index']} {top['opcode']} {top['name']} "
            f"{top['time_ms']:.3f} ms ({100 * top['share']:.0f} %)"
        )
    return lines


def memory_report(doc: dict | None, failure: str | None, bundle) -> list[str]:
    """What ``compile`` says about the memory timeline it recorded."""
    from tvm_explorer.memory.table import size, tolerance_text

    if doc is None:
        return [f"  memory.json: not written ({failure})"] if failure else []
    peak = doc["peak"]
    where = ""
    if peak["step"] is not None:
        where = f" at step {peak['step']} of {len(doc['steps'])} ({doc['steps'][peak['step']]['callee']})"
    lines = [f"  memory: peak {size(peak['bytes'])}{where}; tvm-explorer memory {bundle} says what makes it up"]
    m = doc["measured"]
    if m["status"] == "measured":
        # The tolerance said with the verdict: on a tiny model, 8 KiB measured beside 640 B
        # replayed is agreement (malloc's own overhead), which a bare "agrees" does not explain.
        tolerance = tolerance_text(cast("MemoryDocument", doc))  # as written: the validated shape
        verdict = f"agrees within {tolerance}" if m.get("naive_within") else f"DISAGREES: off by more than {tolerance}"
        lines.append(
            f"  memory measured on {m.get('where') or 'this machine'}: {size(m['naive_peak_bytes'])} at the "
            f"run's peak, {size(doc['predicted']['naive_peak_bytes'])} replayed ({verdict})"
        )
    return lines


def tuning_report(doc: TuningDocument | None, bundle) -> list[str]:
    """What ``compile --tune`` says about its ledger: the verdict, loud when tuning did nothing."""
    from tvm_explorer.bundle.sections.tuning import state_word
    from tvm_explorer.inert.text import one_line

    if doc is None:
        return []
    counts: dict[str, int] = {}
    for k in doc["kernels"]:
        counts[state_word(k)] = counts.get(state_word(k), 0) + 1
    summary = ", ".join(f"{n} {word}" for word, n in sorted(counts.items()))
    lines = [f"  tuning: {summary or 'no kernels'}; tvm-explorer tuning {bundle} shows each"]
    verdict = doc["verdict"]
    if verdict["level"] != "ok":
        lines.append(f"  tuning {verdict['level'].upper()}: {one_line(verdict['message'])}")
    return lines

"""``tvm-explorer tuning BUNDLE [--json]``: the tuning ledger of a ``compile --tune``: per kernel
and its layers tuned / untuned / database miss / build failed, trials, default vs tuned time."""

from __future__ import annotations

import json

from tvm_explorer.bundle.sections.tuning import TuningDocument
from tvm_explorer.cli.options import fail
from tvm_explorer.errors import ExplorerError
from tvm_explorer.inert.text import one_line as plain

_STATE_WORDS = {"tuned": "tuned", "untuned": "untuned", "miss": "DATABASE MISS", "build_failed": "BUILD FAILED"}


def add_parser(sub) -> None:
    p = sub.add_parser("tuning", help="tuning ledger: per kernel and layer, tuned / untuned / miss / build failures")
    p.add_argument("bundle")
    p.add_argument("--json", action="store_true", help="tuning.json with each kernel's layer names")
    p.set_defaults(run=run_tuning)


def _layer_names(bundle, ids: list[int]) -> list[str]:
    out = []
    for lid in ids:
        lay = bundle.layers[lid] if 0 <= lid < len(bundle.layers) else None
        out.append(f"layer {lid}" if lay is None else (f"{lay.opcode} {lay.name or ''}").strip())
    return out


def _us(value) -> str:
    return "-" if value is None else f"{value:.2f}"


def render(doc: TuningDocument, bundle) -> str:
    """The ledger as a table, the verdict first when tuning did nothing, errors after."""
    lines = []
    verdict = doc["verdict"]
    if verdict["level"] == "error":
        lines.append(f"TUNING FAILED: {plain(verdict['message'])}")
    elif verdict["level"] == "warning":
        lines.append(f"warning: {plain(verdict['message'])}")
    lines.append(
        f"target {doc['target']}, {doc['trials_requested']} trials asked, {doc['tuning_seconds']:.0f} s tuning, "
        f"database {plain(doc['database'])}; times: {doc['timed_with']}, default and tuned side by side"
    )
    head = f"{'kernel':<36} {'state':<14} {'trials':>6} {'default us':>11} {'tuned us':>9} {'speedup':>8}  layers"
    lines += [head, "-" * len(head)]
    for k in doc["kernels"]:
        state = _STATE_WORDS[k["state"]] + (" (reused)" if k["reused"] and k["state"] == "tuned" else "")
        speed = "-" if k["speedup"] is None else f"{k['speedup']:.2f}x"
        layers = ", ".join(plain(n) for n in _layer_names(bundle, k["layers"]))
        lines.append(
            f"{plain(k['kernel']):<36} {state:<14} {k['trials']:>6} {_us(k['default_us']):>11} "
            f"{_us(k['tuned_us']):>9} {speed:>8}  {layers}"
        )
        if k["reason"]:
            lines.append(f"    why: {plain(k['reason'])}")
        if k["build_failures"] or k["run_failures"]:
            lines.append(
                f"    {k['build_failures']} failed to build, {k['run_failures']} failed to run; the builder said:"
            )
        for err in k["errors"]:
            for line in str(err).splitlines()[-4:]:
                lines.append(f"      {plain(line)}")
        if k["trace"]:
            lines.append(f"    trace: {plain(k['trace'])}")
    return "\n".join(lines)


def run_tuning(args) -> int:
    """Print the tuning ledger of a bundle (exit 1 when tuning did nothing: a gate for scripts)."""
    from tvm_explorer.bundle.reader import Bundle

    try:
        bundle = Bundle(args.bundle)
        doc = bundle.tuning()
        if doc is None:
            raise ExplorerError(f"{args.bundle}: the bundle has no tuning.json (it was compiled without --tune)")
    except ExplorerError as err:
        return fail(str(err))
    if args.json:
        out = dict(doc)
        out["kernels"] = [dict(k, layer_names=_layer_names(bundle, k["layers"])) for k in doc["kernels"]]
        print(json.dumps(out, indent=1))
    else:
        print(render(doc, bundle))
    return 1 if doc["verdict"]["level"] == "error" else 0

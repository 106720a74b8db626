"""``tvm-explorer tuning BUNDLE [--json]``: the tuning ledger of a ``compile --tune``: per kernel
and its layers tuned / untuned / database miss / build failed, trials, default vs tuned time."""

from __future__ import annotations

import json
import sys

from tvm_explorer.bundle.sections.tuning import TuningDocument, state_word
from tvm_explorer.cli.options import add_bundle_query, fail
from tvm_explorer.errors import ExplorerError
from tvm_explorer.inert.text import one_line as plain
from tvm_explorer.tuning.left import TimeLeft, time_left


def _shown(word: str) -> str:
    """A state as the table shows it: what did not go to plan in capitals."""
    return word if word in ("tuned", "untuned") else word.upper()


def add_parser(sub) -> None:
    add_bundle_query(
        sub,
        "tuning",
        "tuning ledger: per kernel and layer, tuned / untuned / miss / build failures",
        run_tuning,
        "tuning.json with each kernel's layer names",
    )


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
        f"database {plain(doc['database'])}; times: {plain(doc['timed_with'])}"
        + ("" if doc.get("times_not_measured") else ", default and tuned side by side")
    )
    if doc.get("candidates_ran_on"):
        where = plain(doc["candidates_ran_on"])
        lines.append(
            f"candidates measured {where}" if where.startswith("nowhere") else f"candidates measured on {where}"
        )
    head = f"{'kernel':<36} {'state':<14} {'trials':>6} {'default us':>11} {'tuned us':>9} {'speedup':>8}  layers"
    lines += [head, "-" * len(head)]
    for k in doc["kernels"]:
        state = _shown(state_word(k)) + (" (reused)" if k["reused"] and k["state"] == "tuned" else "")
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
                f"    {k['build_failures']} failed to build, {k['run_failures']} failed to run; "
                + ("the builder and the device said:" if k["run_failures"] else "the builder said:")
            )
        for err in k["errors"]:
            for line in str(err).splitlines()[-4:]:
                lines.append(f"      {plain(line)}")
        if k["trace"]:
            lines.append(f"    trace: {plain(k['trace'])}")
    return "\n".join(lines)


def _pct(value) -> str:
    return "-" if value is None else f"{value * 100:.1f}%"


def render_left(left: TimeLeft, bundle) -> list[str]:
    """The layers ranked by the time more tuning could still win (``tuning/left.py``)."""
    weights = (
        "the profile's measured share of the model's time"
        if left["share_from"] == "profile"
        else "each kernel's share of the sum of the kernels' measured times (compile with --profile for the model's)"
    )
    if left["kernels"] and all(r["left_us"] is None for r in left["kernels"]):
        total = "Time left on the table: unknown (no kernel's time was measured)"
    else:
        total = f"Time left on the table: {left['total_left_us']:.2f} us per inference" + (
            f", {_pct(left['total_left_share'])} of the model's time" if left["total_left_share"] is not None else ""
        )
    lines = ["", total, f"  weighted by {weights}"]
    head = f"{'#':>3} {'left us':>9} {'of model':>9} {'kernel':<36} {'state':<14} {'calls':>5}  layers"
    lines += [head, "-" * len(head)]
    for i, r in enumerate(left["kernels"], 1):
        left_us = "?" if r["left_us"] is None else f"{r['left_us']:.2f}"
        layers = ", ".join(plain(n) for n in _layer_names(bundle, r["layers"]))
        lines.append(
            f"{i:>3} {left_us:>9} {_pct(r['left_share']):>9} {plain(r['kernel']):<36} "
            f"{_shown(r['state_word']):<14} {r['calls']:>5}  {layers}"
        )
        lines.append(f"      {r['why']}")
    return lines


def _costs(bundle):
    try:
        return bundle.costs()
    except ExplorerError as err:
        print(f"tvm-explorer: warning: {err}; time left is weighted by the ledger's own times", file=sys.stderr)
        return None


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
    left = time_left(doc, _costs(bundle))
    if args.json:
        out = dict(doc)
        out["kernels"] = [dict(k, layer_names=_layer_names(bundle, k["layers"])) for k in doc["kernels"]]
        out["time_left"] = dict(
            left, layers=[dict(e, name=_layer_names(bundle, [e["layer"]])[0]) for e in left["layers"]]
        )
        print(json.dumps(out, indent=1))
    else:
        print("\n".join([render(doc, bundle), *render_left(left, bundle)]))
    return 1 if doc["verdict"]["level"] == "error" else 0

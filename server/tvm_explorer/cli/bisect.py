"""``tvm-explorer bisect MODEL``: compile (recording every pass), then find the first pass
after which the model's results change beyond the numerics thresholds."""

from __future__ import annotations

import argparse
import json
import os
import sys

from tvm_explorer.bundle.sections.bisect import BISECT_FILE
from tvm_explorer.cli.options import add_pipeline_option, add_trust_option
from tvm_explorer.errors import ExplorerError


def add_parser(sub) -> None:
    """``tvm-explorer bisect``."""
    p = sub.add_parser("bisect", help="find the pass after which the model computes something else")
    p.add_argument("model", help="the model: .tflite, .onnx or .pt2")
    p.add_argument("--target", default="llvm", help="llvm (default) or c")
    add_pipeline_option(p, "your Relax pipeline (as for compile)")
    p.add_argument("--inputs", metavar="X.npz", help="run on these inputs (default: seeded random)")
    p.add_argument(
        "--reference",
        metavar="REF",
        help="compare with this model of the same graph run by its own engine (a .tflite "
        "by the LiteRT interpreter, a .onnx by onnxruntime, a .pt2 by eager PyTorch; "
        "default: the imported module built without optimizations)",
    )
    p.add_argument(
        "-o",
        "--output",
        metavar="BUNDLE",
        help="also write the bundle (with bisect.json), so the culprit's diff can be opened",
    )
    p.add_argument("--json", action="store_true")
    p.add_argument(
        "--progress",
        choices=("auto", "bar", "json", "none"),
        default="auto",
        help="progress of the compile and of each build of the search: a bar on a "
        "terminal (auto), JSON lines on stdout (json), or none",
    )
    p.add_argument(
        "--timeout",
        type=float,
        default=1800.0,
        metavar="SECONDS",
        help="stop a bisection that runs longer (default 1800; 0: never)",
    )
    add_trust_option(p)
    p.add_argument("--in-process", action="store_true", help=argparse.SUPPRESS)
    p.set_defaults(run=run_supervised_bisect)


def run_supervised_bisect(args) -> int:
    """``bisect`` in a supervised child, like ``compile``: a crash inside TVM (while building or
    running a snapshot), a ``--timeout`` or an interrupt ends with one message."""
    if args.in_process or not hasattr(os, "fork"):
        return run_bisect(args)
    args.activity = ("bisect", "bisecting")
    args.memory_limit = 0
    from tvm_explorer.bundle.writer import COMMIT_CLAIMS, COMMIT_GUARDS
    from tvm_explorer.supervise.supervisor import run_supervised

    return run_supervised(args, _bisect_child, COMMIT_GUARDS, COMMIT_CLAIMS)


def _bisect_child(args) -> int:
    import signal

    def stop(signum, _frame):
        raise KeyboardInterrupt(signal.Signals(signum).name)

    signal.signal(signal.SIGTERM, stop)  # SIGUSR1 (the timeout) keeps its default: the end
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT, signal.SIGTERM, signal.SIGUSR1})
    return run_bisect(args)


def _error_json(err) -> float | None:
    import math

    return None if err is None or not math.isfinite(err.max_abs) else err.max_abs


def bisect_compiled(
    model,
    target: str,
    inputs: dict,
    session,
    recorder,
    pipeline_spec,
    reference,
    passes: list[dict] | None,
    executable=None,
) -> dict:
    """Run the search on a finished compile; the bisect JSON."""
    from tvm_explorer.bisect.search import Bisector, first_changed_layer
    from tvm_explorer.capture.custom_pipeline import make_pipeline
    from tvm_explorer.capture.pipeline import make_target
    from tvm_explorer.numerics.reference import describe, quantization_of, run_reference

    ref = run_reference(reference, inputs) if reference else None
    quant = quantization_of(model.path)
    pipeline = make_pipeline(pipeline_spec, make_target(target)) if pipeline_spec else None
    announce = (lambda what: session.progress.starting("run", what)) if session.progress is not None else None
    b = Bisector(
        model,
        target,
        inputs,
        session.origins,
        recorder,
        session.final_relax,
        pipeline,
        ref,
        quant,
        announce=announce,
        executable=executable,
    )
    culprit = layer = None
    layers: list = []
    before_err = after_err = None
    note = None
    lo, hi = b.find_relax()
    if hi is not None:
        snap = b.snapshots[hi]
        culprit = {"index": snap.index, "name": snap.name, "stage": "relax"}
        after = b.relax(hi)
        after_err = after.error
        if lo >= 0:
            before = b.relax(lo)
            before_err = before.error
            before_layers = before.run.observation.outputs
        else:
            before_err = None
            before_layers = {
                (lay.id, j): ref.tensors[t.name]
                for lay in model.layers
                for j, t in enumerate(lay.outputs)
                if t.name in ref.tensors
            }
        layer = first_changed_layer(model, before_layers, after.run.observation.outputs, quant)
        layers = layer_errors(model, before_layers if lo >= 0 else None, after.run.observation.outputs, b, quant)
        if hi == 0:
            note = (
                "the imported module already differs from the reference: the frontend "
                "conversion (or the reference) is where the results depart"
            )
        if hi - lo > 1 and lo >= 0:
            skipped = [b.snapshots[k].name for k in range(lo + 1, hi)]
            note = f"snapshots after {', '.join(skipped)} could not be built with the minimal lowering"
    else:
        name, real = b.find_tir()
        if name is not None:
            index = next((p["index"] for p in passes or () if p.get("stage") == "tir" and p.get("name") == name), None)
            culprit = {"index": index, "name": name, "stage": "tir"}
            fixed = next(e for e in reversed(b.tir_done) if e.name == name and e.error is not None)
            before_err, after_err = fixed.error, real.error
            layer = first_changed_layer(model, fixed.run.observation.outputs, real.run.observation.outputs, quant)
            layers = layer_errors(model, fixed.run.observation.outputs, real.run.observation.outputs, b, quant)
        elif real.error.diverges:
            note = (
                "the compiled model differs from the baseline, but no single Relax snapshot or "
                "TIR pass that can be left out explains it"
            )
    final = b.real()
    if culprit is None and final.error is not None:
        after_err = final.error  # no culprit: what the whole pipeline ends with
    snapshots = [
        {
            "index": e.index,
            "name": e.name,
            "max_abs": _error_json(e.error),
            **({"problem": e.problem} if e.problem else {}),
        }
        for _k, e in sorted(b.relax_done.items())
    ]
    diff = None
    if culprit is not None and passes:
        entry = next((p for p in passes if p.get("index") == culprit["index"]), None)
        if entry:
            diff = {"before": entry.get("before"), "after": entry.get("after")}
    first = None
    layer_info = None
    if layer is not None:
        lay, err = layer
        first = {"subgraph": lay.subgraph, "op_index": lay.op_index}
        layer_info = {"opcode": lay.opcode, "name": lay.name, "max_abs": _error_json(err), "cosine": err.cosine}
    return {
        "schema_version": 1,
        "model": os.path.basename(model.path),
        "target": target,
        "pipeline": pipeline_spec,
        "baseline": (describe(reference) if reference else "the imported module, built with the minimal lowering"),
        "culprit": culprit,
        "error_before": _error_json(before_err) if culprit else None,
        "error_after": _error_json(after_err),
        "error_final": _error_json(final.error),
        "first_divergence": first,
        "layer": layer_info,
        "diff": diff,
        "layers": layers,
        "snapshots": snapshots,
        "tir_builds": len(b.tir_done),
        "note": note,
    }


def layer_errors(model, before: dict | None, after: dict, bisector, quant: dict) -> list[dict]:
    """Per observed layer: its error against the baseline's layer output before and after the
    culprit (the baseline's layers: the import snapshot's run, or the reference's tensors)."""
    from tvm_explorer.numerics.compare import compare

    base = _baseline_layers(model, bisector)
    out = []
    for lay in model.layers:
        row = {"subgraph": lay.subgraph, "op_index": lay.op_index, "before": None, "after": None}
        for key, run in (("before", before), ("after", after)):
            errs = []
            for j, t in enumerate(lay.outputs):
                got, ref = (run or {}).get((lay.id, j)), base.get((lay.id, j))
                if got is not None and ref is not None:
                    errs.append(compare(got, ref, quant.get(t.name), quant.get(t.name)).max_abs)
            if errs:
                row[key] = max(errs)
        if row["before"] is not None or row["after"] is not None:
            out.append(row)
    return out


def _baseline_layers(model, bisector) -> dict:
    if bisector.reference is not None:
        return {
            (lay.id, j): bisector.reference.tensors[t.name]
            for lay in model.layers
            for j, t in enumerate(lay.outputs)
            if t.name in bisector.reference.tensors
        }
    first = bisector.relax(0)
    return first.run.observation.outputs if first.run is not None else {}


def run_bisect(args) -> int:
    """The command: compile, search, report."""
    from tvm_explorer.cli.options import exit_code_of, trust_from_args

    trust_from_args(args)
    try:
        data = _bisect(args)
    except ExplorerError as err:
        print(f"tvm-explorer: error: {err}", file=sys.stderr)
        return exit_code_of(err)
    except KeyboardInterrupt:
        print(
            "tvm-explorer: error: interrupted; no bisect report"
            + (f" and no bundle ({args.output} is unchanged)" if args.output else ""),
            file=sys.stderr,
        )
        return 130
    except MemoryError:
        print(f"tvm-explorer: error: {args.model}: bisect ran out of memory", file=sys.stderr)
        return 2
    except Exception as err:  # noqa: BLE001 - one message, the traceback only for a report
        import traceback

        traceback.print_exc()
        print(
            f"tvm-explorer: error: {args.model}: internal error in bisect "
            f"({type(err).__name__}: {err}); please report this",
            file=sys.stderr,
        )
        return 3
    if args.json:
        print(json.dumps(data, indent=1))
    else:
        for line in format_report(data, args.output):
            print(line)
    return 0


def _bisect(args) -> dict:
    from tvm_explorer.frontends import load_any
    from tvm_explorer.numerics.reference import check_same_graph
    from tvm_explorer.runtime.inputs import inputs_for

    model = load_any(args.model)
    if args.target not in ("llvm", "c"):
        raise ExplorerError(
            f"bisect runs the compiled model on this machine's CPU: use --target llvm or c (not {args.target})"
        )
    inputs = inputs_for(model, args.inputs)
    if args.reference:
        if not os.path.isfile(args.reference):
            raise ExplorerError(f"{args.reference}: no such reference model")
        check_same_graph(model, args.reference)
    from tvm_explorer.app.compile import compile_model
    from tvm_explorer.bisect.snapshots import SnapshotRecorder

    recorder = SnapshotRecorder()
    held: dict = {}

    def on_session(session):
        recorder.attach(session)
        held["session"] = session

    def after_build(session, executable):
        held["data"] = bisect_compiled(
            model,
            args.target,
            inputs,
            session,
            recorder,
            args.pipeline,
            args.reference,
            session.writer.passes,
            executable,
        )
        return {BISECT_FILE: json.dumps(held["data"], indent=1)}

    from tvm_explorer.cli.progress_display import progress_display

    with progress_display(getattr(args, "progress", "none")) as on_progress:
        result = compile_model(
            args.model,
            args.output,
            args.target,
            after_build=after_build if args.output else None,
            pipeline=args.pipeline,
            on_session=on_session,
            on_progress=on_progress,
        )
        if "data" not in held:
            held["data"] = bisect_compiled(
                model,
                args.target,
                inputs,
                held["session"],
                recorder,
                args.pipeline,
                args.reference,
                None,
                result.executable,
            )
    return held["data"]


def format_report(data: dict, bundle: str | None) -> list[str]:
    """The text report."""
    from tvm_explorer.bundle.sections.numerics import unit

    lines = [
        f"{data['model']} ({data['target']}"
        f"{', pipeline ' + data['pipeline'] if data['pipeline'] else ''}) against {data['baseline']}"
    ]
    c = data["culprit"]
    fmt = lambda v: "n/a" if v is None else f"{v:.3g}"  # noqa: E731
    if c is None:
        lines.append(
            "No culprit: "
            + (data.get("note") or "no pass changes the results beyond the thresholds (docs/numerics.md)")
        )
        lines.append(f"  the compiled model's outputs, max abs error: {fmt(data.get('error_final'))}")
    else:
        where = f"pass {c['index']} " if c["index"] is not None else "pass "
        lines.append(f"Culprit: {c['stage']} {where}{c['name']}")
        lines.append(
            f"  model outputs, max abs error: {fmt(data['error_before'])} before it, "
            f"{fmt(data['error_after'])} after it, {fmt(data.get('error_final'))} in the "
            f"compiled model"
        )
        if data["layer"]:
            f = data["first_divergence"]
            lines.append(
                f"  first layer changed by it: {unit(data)} {f['op_index']} {data['layer']['opcode']} "
                f"{data['layer']['name']} (max abs {fmt(data['layer']['max_abs'])})"
            )
        if data["diff"] and bundle:
            lines.append(
                f"  its diff: {os.path.join(bundle, data['diff']['after'] or '')} (before: {data['diff']['before']})"
            )
        if data.get("note"):
            lines.append(f"  note: {data['note']}")
    lines.append("Snapshots built (Relax, minimal lowering):")
    for s in data["snapshots"]:
        err = "could not be built" if s["max_abs"] is None else f"max abs {s['max_abs']:.3g}"
        lines.append(f"  {s['index']:>4}  {s['name'][:40]:40} {err}")
    if data["tir_builds"]:
        lines.append(f"TIR rebuilds with passes left out: {data['tir_builds']}")
    return lines

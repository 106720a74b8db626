"""Capture overhead: what recording provenance costs over TVM's stock import and compile.

For each model and target, measured side by side in one run (A/B interleaved, rotating order,
every measurement of a compile in a fresh process):

  import   span-filling TFLite import      vs stock ``from_tflite``                 goal <= 1.10x
  kept     compile, provenance kept through every pass, nothing written
                                             vs stock import + compile, same pipeline goal <= 1.05x
  capture  full capture: every pass, TIR, generated code, index written to a bundle
                                             vs stock import + compile               goal <= 1.5x
  memory   peak RSS of each vs stock (fresh process each)                           goal <= 1.10x
  wall     full capture's wall time vs stock                                       goal <= 1.5x
           and vs TVM's own ``DumpIR`` instrument (whole module after every pass)   goal <= 1.0x

The full capture prints every pass's IR after the compile in forked worker processes
(``capture/parallel_print.py``); ``capture_inline`` is the same capture printed inline during
the compile (``TVMX_PRINT_WORKERS=0``, how every capture printed before), measured beside it.
CPU times include the printing workers' CPU.

Two floors are measured beside them, to show what no implementation of the same recording
can go below: ``reader`` (stock + reading the span of every binding and store each pass
rebuilt: the least a tracker must look at) and ``printer`` (stock + TVM's printer on every
function a changed pass rebuilt: the printing any capture of every pass's IR must pay).

``--baseline DIR`` adds ``baseline_inline``: the inline capture run by the package in ``DIR``
(the ``server/`` directory of an older checkout, e.g. ``git archive <commit> server | tar -x``),
so that a change to the capture is measured before/after side by side in one run (its bundle
should be byte-identical: compare them with tests/capture/test_parallel_print.py's helpers).

Ratios are medians of per-repetition ratios of CPU time (wall time is shown too), with the
spread (min-max) in parentheses. Usage:

    .venv/bin/python bench/capture_overhead.py [--quick] [--reps N] [--models a,b] [--targets c,cuda]
        [--variants stock,capture,capture_inline,dumpir] [--baseline DIR] [--json out.json]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import benchlib as bl  # noqa: E402

MODELS = ["mobilenet_v1_fp32", "mobilenet_v3_small_int8", "hand_recrop"]
TARGETS = ["c", "cuda"]
GOALS = {"import": 1.10, "kept": 1.05, "capture": 1.5, "memory": 1.10, "capture_wall": 1.5, "vs_dumpir": 1.0}
VARIANTS = ["stock", "reader", "kept", "printer", "capture", "capture_inline", "dumpir"]
BASELINE = "baseline_inline"  # capture_inline by an older checkout's package (--baseline)


def measure_import(model: Path, reps: int) -> dict:
    """In-process, interleaved: many short repetitions (the import takes 0.02-0.3 s)."""
    from tvm_explorer.frontends.tflite.importer import import_tflite
    from tvm_explorer.frontends.tflite.loader import load_model
    from tvm_explorer.provenance import OriginTable

    loaded = load_model(model)
    runs = {
        "stock": lambda: import_tflite(loaded, None, fill_spans=False),
        "spans": lambda: import_tflite(loaded, OriginTable()),
    }
    for fn in runs.values():  # warm up both (first-call costs in TVM)
        fn()
    cpu = {k: [] for k in runs}
    wall = {k: [] for k in runs}
    for _rep, order in bl.rotations(list(runs), reps):
        for name in order:
            c0, w0 = time.process_time(), time.perf_counter()
            runs[name]()
            cpu[name].append(time.process_time() - c0)
            wall[name].append(time.perf_counter() - w0)
    mem = {k: bl.run_worker("import", model=str(model), variant=k) for k in runs}
    return {
        "stock_cpu": bl.Summary.of(cpu["stock"]),
        "ratio_cpu": bl.paired_ratios(cpu["stock"], cpu["spans"]),
        "ratio_wall": bl.paired_ratios(wall["stock"], wall["spans"]),
        "peak_ratio": mem["spans"]["peak"] / mem["stock"]["peak"],
        "growth": {k: m["growth"] for k, m in mem.items()},
    }


def measure_compile(
    model: Path, target: str, reps: int, workdir: Path, variants=VARIANTS, baseline: str | None = None
) -> dict:
    res = {v: [] for v in VARIANTS + [BASELINE]}
    for rep, order in bl.rotations(list(variants), reps):
        for v in order:
            out = str(workdir / f"{model.stem}.{target}.{rep}.{v}.out")
            if v == BASELINE:
                r = bl.run_worker(
                    "compile",
                    env={"PYTHONPATH": baseline},
                    model=str(model),
                    target=target,
                    variant="capture_inline",
                    out=out,
                )
                if not r["package"].startswith(baseline):
                    raise RuntimeError(f"{BASELINE} ran the package in {r['package']}, not {baseline}")
            else:
                r = bl.run_worker("compile", model=str(model), target=target, variant=v, out=out)
            res[v].append(r)
            print(
                f"    rep {rep} {v:14s} cpu {r['cpu']:7.2f}s (workers {r.get('children_cpu', 0):5.2f}s) "
                f"wall {r['wall']:7.2f}s peak {bl.mib(r['peak'])}",
                flush=True,
            )
    cpu = {v: [r["cpu"] for r in res[v]] for v in res}
    wall = {v: [r["wall"] for r in res[v]] for v in res}
    process = {v: [r["process_wall"] for r in res[v]] for v in res}
    peak = {v: [r["peak"] for r in res[v]] for v in VARIANTS}
    growth = {v: [r["growth"] for r in res[v]] for v in VARIANTS}
    bundle = (res["capture"] or res["capture_inline"] or [{}])[0]
    measures = {"cpu": cpu, "wall": wall, "process": process, "peak": peak}
    # Which variants each measure compares with stock; a ratio's key is ``{variant}_{measure}``.
    vs_stock = {
        "cpu": ("reader", "printer", "kept", "capture", "capture_inline", "dumpir", BASELINE),
        "wall": ("kept", "capture", "capture_inline", "dumpir", BASELINE),
        "process": ("capture", "capture_inline", "dumpir"),
        "peak": ("kept", "capture"),
    }
    short = {"capture_inline": "inline", BASELINE: "baseline"}
    return {
        "stock_cpu": bl.Summary.of(cpu["stock"]),
        "stock_wall": bl.Summary.of(wall["stock"]),
        "stock_process": bl.Summary.of(process["stock"]),
        **{
            f"{short.get(v, v)}_{m}": bl.paired_ratios(measures[m]["stock"], measures[m][v])
            for m, variants_compared in vs_stock.items()
            for v in variants_compared
        },
        "vs_dumpir_wall": bl.paired_ratios(wall["dumpir"], wall["capture"]),
        "vs_inline_wall": bl.paired_ratios(wall["capture_inline"], wall["capture"]),
        "inline_vs_baseline_cpu": bl.paired_ratios(cpu[BASELINE], cpu["capture_inline"]),
        "inline_vs_baseline_wall": bl.paired_ratios(wall[BASELINE], wall["capture_inline"]),
        "workers_cpu": bl.Summary.of(r.get("children_cpu", 0) for r in res["capture"]),
        "growth": {v: bl.Summary.of(growth[v]) for v in VARIANTS},
        "peak": {v: bl.Summary.of(peak[v]) for v in VARIANTS},
        "bundle_bytes": bundle.get("bundle_bytes", 0),
        "bundle_files": bundle.get("bundle_files", 0),
    }


def _pairs(models: list[str], targets: list[str], results: dict):
    """``(model, target, import results, compile results)`` for every measured pair, in order."""
    for name in models:
        for target in targets:
            yield name, target, results[(name, "import")], results[(name, target)]


# A column's cell: a result's ratio (``key``), with ``fmt`` arguments (``(key, args)``), or
# computed from the import and compile results.
Cell = str | tuple[str, tuple] | Callable[[dict, dict], str]


def _cell(how: Cell, imp: dict, r: dict) -> str:
    if isinstance(how, str):
        return r[how].fmt()
    if isinstance(how, tuple):
        key, args = how
        return r[key].fmt(*args)
    return how(imp, r)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="mobilenet_v1 only, c and cuda, 2 repetitions")
    ap.add_argument("--reps", type=int, help="repetitions per compile variant (default 5; quick 2)")
    ap.add_argument("--import-reps", type=int, help="repetitions of the import (default 15; quick 7)")
    ap.add_argument("--models", help=f"comma-separated names in tests/models (default {','.join(MODELS)})")
    ap.add_argument("--targets", help="comma-separated targets (default c,cuda)")
    ap.add_argument(
        "--variants", help=f"comma-separated compile variants (default {','.join(VARIANTS)}; stock is always measured)"
    )
    ap.add_argument(
        "--baseline",
        help=f"server/ directory of an older checkout: also measure its inline capture ({BASELINE}) side by side",
    )
    ap.add_argument("--json", help="also write the results to this JSON file")
    args = ap.parse_args(argv)
    models = args.models.split(",") if args.models else (MODELS[:1] if args.quick else MODELS)
    targets = args.targets.split(",") if args.targets else TARGETS
    reps = args.reps or (2 if args.quick else 5)
    import_reps = args.import_reps or (7 if args.quick else 15)
    variants = ["stock"] + [v for v in (args.variants.split(",") if args.variants else VARIANTS) if v != "stock"]
    unknown = set(variants) - set(VARIANTS)
    if unknown:
        ap.error(f"unknown variants {sorted(unknown)}; choose from {VARIANTS}")
    if args.baseline:
        if not (Path(args.baseline) / "tvm_explorer" / "__init__.py").is_file():
            ap.error(f"--baseline {args.baseline}: no tvm_explorer package there (give an older checkout's server/)")
        args.baseline = str(Path(args.baseline).resolve())
        variants.append(BASELINE)
    print(f"# Capture overhead — {bl.machine_note()}; {reps} compile repetitions, {import_reps} import repetitions\n")

    results = {}
    with tempfile.TemporaryDirectory(prefix="tvmx-bench-") as tmp:
        for name in models:
            model = bl.MODELS / f"{name}.tflite"
            print(f"## {name}: import", flush=True)
            results[(name, "import")] = measure_import(model, import_reps)
            for target in targets:
                print(f"## {name} / {target}: compile", flush=True)
                results[(name, target)] = measure_compile(model, target, reps, Path(tmp), variants, args.baseline)

    def table(heading: str, columns: list[tuple[str, Cell]]) -> None:
        """One row for each (model, target): its name, its target, then a cell for each column."""
        print(heading)
        rows = [
            [name, target, *(_cell(how, imp, r) for _, how in columns)]
            for name, target, imp, r in _pairs(models, targets, results)
        ]
        print(bl.table(["model", "target", *(title for title, _ in columns)], rows))

    seconds = (2, " s")
    table(
        "\n### Time (CPU-time ratio vs stock: median of paired repetitions, (min–max))\n",
        [
            (f"import ≤{GOALS['import']}", lambda imp, r: imp["ratio_cpu"].fmt()),
            ("stock compile CPU", ("stock_cpu", seconds)),
            ("reader floor", "reader_cpu"),
            (f"kept ≤{GOALS['kept']}", "kept_cpu"),
            ("printer floor", "printer_cpu"),
            (f"capture ≤{GOALS['capture']}", "capture_cpu"),
            ("wall kept / capture", lambda imp, r: f"{r['kept_wall'].median:.2f} / {r['capture_wall'].median:.2f}"),
        ],
    )
    table(
        "\n### Wall time (the import and compile step, fresh process each): ratio vs stock, median of paired "
        "repetitions (min–max); CPU ratio beside it\n",
        [
            ("stock wall", ("stock_wall", seconds)),
            (f"capture wall ≤{GOALS['capture_wall']}", "capture_wall"),
            ("capture CPU", "capture_cpu"),
            ("of it workers' CPU", ("workers_cpu", seconds)),
            ("inline wall", "inline_wall"),
            ("inline CPU", "inline_cpu"),
            ("DumpIR wall", "dumpir_wall"),
            ("DumpIR CPU", "dumpir_cpu"),
            (f"capture / DumpIR wall ≤{GOALS['vs_dumpir']}", "vs_dumpir_wall"),
            ("capture / inline wall", "vs_inline_wall"),
        ],
    )
    table(
        "\n### Whole process (a fresh Python process from start to exit: interpreter, importing "
        "TVM, the compile, writing): ratio vs the same for stock, median of paired repetitions\n",
        [
            ("stock process", ("stock_process", seconds)),
            (f"capture ≤{GOALS['capture_wall']}", "capture_process"),
            ("inline capture", "inline_process"),
            ("DumpIR", "dumpir_process"),
        ],
    )
    if args.baseline:
        table(
            f"\n### Inline capture now vs before ({args.baseline}): ratio vs stock, median of paired "
            "repetitions (min–max)\n",
            [
                ("stock CPU", ("stock_cpu", seconds)),
                ("before: CPU", "baseline_cpu"),
                ("now: CPU", "inline_cpu"),
                ("now / before CPU", "inline_vs_baseline_cpu"),
                ("before: wall", "baseline_wall"),
                ("now: wall", "inline_wall"),
                ("now / before wall", "inline_vs_baseline_wall"),
            ],
        )
    growth = ("stock", "kept", "capture")
    table(
        "\n### Memory (peak RSS ratio vs stock, fresh process each) and bundle size\n",
        [
            (f"import ≤{GOALS['memory']}", lambda imp, r: f"{imp['peak_ratio']:.3f}"),
            ("kept", ("kept_peak", (3,))),
            ("capture", ("capture_peak", (3,))),
            (
                "growth during compile: stock / kept / capture",
                lambda imp, r: " / ".join(bl.mib(r["growth"][k].median) for k in growth),
            ),
            ("bundle", lambda imp, r: f"{bl.mib(r['bundle_bytes'])} ({r['bundle_files']} files)"),
        ],
    )

    misses = []
    for name in models:
        if results[(name, "import")]["ratio_cpu"].median > GOALS["import"]:
            misses.append(f"{name}: import")
        for target in targets:
            r = results[(name, target)]
            for key, goal in (
                ("kept_cpu", "kept"),
                ("capture_cpu", "capture"),
                ("kept_peak", "memory"),
                ("capture_peak", "memory"),
                ("capture_wall", "capture_wall"),
                ("vs_dumpir_wall", "vs_dumpir"),
            ):
                if r[key].median > GOALS[goal]:
                    misses.append(f"{name}/{target}: {key}")
    print("\nGoals: " + ("all met" if not misses else "missed: " + ", ".join(misses)))
    bl.save_json(args.json, {f"{k[0]}/{k[1]}": v for k, v in results.items()})
    return 0


if __name__ == "__main__":
    sys.exit(main())

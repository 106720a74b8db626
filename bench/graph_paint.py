"""The model graph at real and LLM size (issues 29, 39): first paint, opening a group, zoom/pan
frames and page memory of ``tvm-explorer report`` pages in headless chromium
(``graph_paint.mjs``), and the same model files opened side by side in **Netron** and **Model
Explorer** (``graph_peers.mjs``, with ``--peers``).

Graphs: graph documents of any size without a compile (tests/graph/synthetic.py: an LLM-shaped
graph of N decoder layers, ``llmN``, with real branching — attention, residual adds, weights —,
and a flat chain, ``chainN``); real bundles (``--bundle``); a 32-decoder-layer Llama-style
``.pt2`` exported from a config and compiled (``--llama32``, as bench/llm_scale.py builds it);
and the older synthetic residual TFLite models compiled with the real CLI (``--layers``).

    .venv/bin/python bench/graph_paint.py [--synthetic llm32,llm170,chain10000] [--bundle B...]
        [--llama32] [--layers 1000] [--reps 3] [--expand-all] [--peers MODEL...] [--json FILE]
        [--before DIR]

``--before DIR``: first paint only, of each report as this checkout renders it and as the code in
DIR renders it (DIR/server: a copy of another version's ``server/``, its built assets included),
the two pages taking turns in the same run; medians, ratios and the load average.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
sys.path.insert(0, str(ROOT))
NO_SECTIONS = {"hot_layers": [], "passes": [], "numerics": None, "problems": []}


def residual_model(layers: int, path: Path) -> Path:
    """About ``layers`` operators: residual blocks of 3 (conv, add, relu) in stages of 20 blocks."""
    from tests.tflite_builder import GraphBuilder

    g = GraphBuilder(seed=1)
    y = g.input("input", [1, 8, 8, 4])
    for b in range((layers - 3) // 3):
        scope = f"net/stage{b // 20}/block{b}"
        x = y
        y = g.conv2d(y, filters=4, kernel=3, name=f"{scope}/conv", padding="SAME")
        y = g.add(y, x, name=f"{scope}/add")
        y = g.relu(y, name=f"{scope}/relu")
    y = g.reshape(y, [1, 8 * 8 * 4], name="net/head/flatten")
    y = g.fully_connected(y, units=10, name="net/head/dense")
    y = g.softmax(y, name="net/head/probs")
    g.output(y)
    path.write_bytes(g.build())
    return path


def cli(*args: str) -> None:
    subprocess.run([sys.executable, "-m", "tvm_explorer", *args], check=True, stdout=subprocess.DEVNULL)


def synthetic_report(name: str, out: Path) -> tuple[str, Path]:
    from tests.graph.synthetic import chain_document, llm_document

    from tvm_explorer.graphview.report import render_html

    n = int(name.lstrip("abcdefghijklmnopqrstuvwxyz"))
    doc = llm_document(n) if name.startswith("llm") else chain_document(n)
    out.write_text(render_html(doc, NO_SECTIONS))
    label = (
        f"LLM-shaped, {n} decoder layers (synthetic)" if name.startswith("llm") else "chain without scopes (synthetic)"
    )
    return f"{label}, {len(doc['nodes'])} layers", out


def llama32(work: Path) -> tuple[Path, Path]:
    """The 32-decoder-layer Llama of bench/llm_scale.py, exported and compiled for c."""
    from llm_scale import export_llama  # type: ignore[import-not-found]

    pt2 = work / "llama32.pt2"
    export_llama(pt2, 32)
    bundle = work / "llama32.bundle"
    cli("compile", str(pt2), "-o", str(bundle), "--target", "c")
    return pt2, bundle


BEFORE_RENDER = """
import json, sys
from pathlib import Path
kind, arg, out = sys.argv[1:4]
if kind == "bundle":
    from tvm_explorer.cli.options import load_bundle
    from tvm_explorer.graphview.report import render_report
    from tvm_explorer.navigation.view import BundleView
    Path(out).write_text(render_report(BundleView(load_bundle(arg))))
else:
    from tvm_explorer.graphview.report import render_html
    Path(out).write_text(render_html(json.loads(Path(arg).read_text()), json.loads(sys.argv[4])))
"""


def render_before(before: Path, report: Path, bundle: Path | None) -> Path:
    """The same report as the code in ``before`` renders it (a subprocess with its ``server/``)."""
    out = report.with_name(report.stem + ".before.html")
    if bundle is not None:
        argv = ["bundle", str(bundle), str(out)]
    else:
        from tests.graph.synthetic import chain_document, llm_document

        name = report.stem
        n = int(name.lstrip("abcdefghijklmnopqrstuvwxyz"))
        doc_path = report.with_suffix(".json")
        doc_path.write_text(json.dumps(llm_document(n) if name.startswith("llm") else chain_document(n)))
        argv = ["synthetic", str(doc_path), str(out), json.dumps(NO_SECTIONS)]
    env = {**os.environ, "PYTHONPATH": str(before / "server")}
    subprocess.run([sys.executable, "-c", BEFORE_RENDER, *argv], check=True, env=env, cwd=before)
    return out


def compare_before(reports: list[tuple[str, Path, Path | None]], before: Path, reps: int) -> list[dict]:
    """First paint of each report beside its ``before`` rendering, the pages taking turns."""
    pairs = [(label, f, render_before(before, f, bundle)) for label, f, bundle in reports]
    load = os.getloadavg()
    proc = subprocess.run(
        ["node", str(BENCH / "graph_paint.mjs"), str(reps), *(str(x) for _, a, b in pairs for x in (b, a))],
        check=True,
        capture_output=True,
        text=True,
        cwd=ROOT / "tests" / "graph",
        env={**os.environ, "PAINT_ONLY": "1"},
    )
    runs = {json.loads(line)["file"]: json.loads(line)["runs"] for line in proc.stdout.splitlines()}
    load_after = os.getloadavg()
    print(f"load average (1 min) {load[0]:.1f} before the runs, {load_after[0]:.1f} after; {reps} repetitions")
    print(
        "| graph | report before / after | first paint before (best) | after (best) | after ÷ before (best) "
        "| opened again: before / after |"
    )
    print("|---|---|---|---|---|---|")
    rows = []
    for label, after, before_f in pairs:
        a = median_row(label, after, runs[str(after)])
        b = median_row(label, before_f, runs[str(before_f)])
        rows.append({"label": label, "before": b, "after": a})
        print(
            f"| {label} | {b['html_mib']:.1f} / {a['html_mib']:.1f} MiB | {b['first_paint_ms']:.0f} ms "
            f"({b['best_paint_ms']:.0f}) | {a['first_paint_ms']:.0f} ms ({a['best_paint_ms']:.0f}) "
            f"| {a['first_paint_ms'] / b['first_paint_ms']:.2f}× ({a['best_paint_ms'] / b['best_paint_ms']:.2f}×) "
            f"| {b['reopen_paint_ms']:.0f} / {a['reopen_paint_ms']:.0f} ms |"
        )
    return rows


def median_row(label: str, f: Path, runs: list[dict]) -> dict:
    row: dict = {"label": label, "html_mib": f.stat().st_size / 2**20, "mode": runs[0]["mode"]}
    for k in runs[0]:
        if k != "mode" and all(isinstance(r.get(k), int | float) for r in runs):
            row[k] = statistics.median(r[k] for r in runs)
    row["best_paint_ms"] = min(r["first_paint_ms"] for r in runs)
    return row


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--synthetic", default="llm32,llm170,chain10000", help="llmN / chainN graph documents")
    ap.add_argument("--layers", default="", help="residual TFLite models to compile (e.g. 100,1000)")
    ap.add_argument("--bundle", nargs="*", default=[], help="real bundles to measure too")
    ap.add_argument("--llama32", action="store_true", help="export and compile the 32-decoder-layer Llama")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--expand-all", action="store_true", help="also open every group, and measure frames then")
    ap.add_argument(
        "--peers",
        nargs="*",
        default=None,
        metavar="MODEL=BUNDLE",
        help="model files to open in Netron and Model Explorer too, each with its bundle (our report)",
    )
    ap.add_argument("--json", help="write the results here")
    ap.add_argument(
        "--before", type=Path, help="a copy of another version's server/ is DIR/server: compare first paint"
    )
    args = ap.parse_args()
    sys.path.insert(0, str(BENCH))
    work = Path(tempfile.mkdtemp(prefix="graph-paint-"))
    from tvm_explorer.cli.options import load_bundle
    from tvm_explorer.graphview.report import render_report
    from tvm_explorer.navigation.view import BundleView

    reports: list[tuple[str, Path]] = []
    bundle_of: dict[Path, Path] = {}
    bundles: list[tuple[str, Path]] = [(Path(b).name, Path(b)) for b in args.bundle]
    peer_models = [(Path(m), Path(b)) for m, _, b in (spec.partition("=") for spec in args.peers or [])]
    if args.llama32:
        pt2, bundle = llama32(work)
        bundles.append(("Llama-style, 32 decoder layers (.pt2, c)", bundle))
        if args.peers is not None:
            peer_models.append((pt2, bundle))
    for n in (int(x) for x in args.layers.split(",") if x):
        model = residual_model(n, work / f"residual{n}.tflite")
        bundle = work / f"residual{n}.bundle"
        cli("compile", str(model), "-o", str(bundle), "--target", "c")
        bundles.append((f"residual {n} layers (TFLite, c)", bundle))
    for label, bundle in bundles:
        out = work / f"{bundle.stem}.html"
        view = BundleView(load_bundle(str(bundle)))
        out.write_text(render_report(view))
        reports.append((f"{label}, {len(view.bundle.layers)} layers", out))
        bundle_of[out] = bundle
    for name in (x for x in args.synthetic.split(",") if x):
        reports.append(synthetic_report(name, work / f"{name}.html"))
    if args.before:
        rows = compare_before([(label, f, bundle_of.get(f)) for label, f in reports], args.before.resolve(), args.reps)
        if args.json:
            Path(args.json).write_text(json.dumps(rows, indent=1))
        return 0
    proc = subprocess.run(
        ["node", str(BENCH / "graph_paint.mjs"), str(args.reps), *(str(f) for _, f in reports)],
        check=True,
        capture_output=True,
        text=True,
        cwd=ROOT / "tests" / "graph",  # where node finds playwright-core (the repo's node_modules)
        env={**__import__("os").environ, **({"EXPAND_ALL": "1"} if args.expand_all else {})},
    )
    rows = [
        median_row(label, f, json.loads(line)["runs"]) for (label, f), line in zip(reports, proc.stdout.splitlines())
    ]
    print(
        "| graph | report | boxes drawn | first paint (best) | main thread | heap | open a group | frame p50 / p95 "
        "| pass slider step (slowest; target 100 ms) |"
    )
    print("|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        expand = f"{r['expand_ms']:.0f} ms" if "expand_ms" in r else "—"
        slider = f"{r['slider_step_ms']:.0f} ms ({r['slider_step_max_ms']:.0f})" if "slider_step_ms" in r else "—"
        print(
            f"| {r['label']} | {r['html_mib']:.1f} MiB | {r['nodes']:.0f} | {r['first_paint_ms']:.0f} ms "
            f"({r['best_paint_ms']:.0f}) | {r['main_thread_ms']:.0f} ms | {r['heap_mib']:.0f} MiB | {expand} "
            f"| {r['frame_p50_ms']:.0f} / {r['frame_p95_ms']:.0f} ms | {slider} |"
        )
    if args.expand_all:
        print("\n| graph | open every group | nodes drawn | frame p50 / p95 | heap |")
        print("|---|---|---|---|---|")
        for r in rows:
            print(
                f"| {r['label']} | {r['expand_all_ms']:.0f} ms | {r['all_nodes']:.0f} "
                f"| {r['all_frame_p50_ms']:.0f} / {r['all_frame_p95_ms']:.0f} ms | {r['all_heap_mib']:.0f} MiB |"
            )
    if args.peers is not None:
        from graph_peers import compare  # type: ignore[import-not-found]

        peers = []
        for model, bundle in peer_models:
            view = BundleView(load_bundle(str(bundle)))
            out = work / f"{bundle.stem}.peer.html"
            out.write_text(render_report(view))
            peers.append((f"{model.name} ({len(view.bundle.layers)} layers)", model, out))
        rows.append({"peers": compare(peers, args.reps, work)})
        print(f"screenshots: {work}/*-ours.png, *-netron.png, *-explorer.png")
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())

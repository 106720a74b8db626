"""First paint of the model graph (issue 29: a 1000-layer model paints within 2 s and pans and
zooms smoothly). Builds synthetic-but-real TFLite models of 100, 300 and 1000 layers (residual
blocks — CONV_2D, ADD of the block's input, RELU — in Keras-like scopes ``stageS/blockB/...``,
so the graph has skip edges and two levels of groups), compiles each with the real CLI
(target c), writes its ``tvm-explorer report`` and opens it in headless chromium
(``graph_paint.mjs``): time to the first painted graph, the ELK layout alone, frame intervals
while zooming and panning. Optionally also real bundles (``--bundle``).

    .venv/bin/python bench/graph_paint.py [--layers 100,300,1000] [--reps 3] [--bundle B...] [--json FILE]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
sys.path.insert(0, str(ROOT))


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


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--layers", default="100,300,1000")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--bundle", nargs="*", default=[], help="real bundles to measure too")
    ap.add_argument("--json", help="write the results here")
    args = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix="graph-paint-"))
    reports: list[tuple[str, Path]] = []
    for n in (int(x) for x in args.layers.split(",") if x):
        model = residual_model(n, work / f"residual{n}.tflite")
        bundle = work / f"residual{n}.bundle"
        cli("compile", str(model), "-o", str(bundle), "--target", "c")
        reports.append((f"residual {n}", bundle))
    for b in args.bundle:
        reports.append((Path(b).name, Path(b)))
    files = []
    for label, bundle in reports:
        out = work / f"{bundle.stem}.html"
        cli("report", str(bundle), "-o", str(out))
        files.append((label, out))
    proc = subprocess.run(
        ["node", str(BENCH / "graph_paint.mjs"), str(args.reps), *(str(f) for _, f in files)],
        check=True,
        capture_output=True,
        text=True,
        cwd=ROOT / "tests" / "graph",  # where node finds playwright-core (the repo's node_modules)
    )
    rows = []
    for (label, f), line in zip(files, proc.stdout.splitlines()):
        runs = json.loads(line)["runs"]
        med = {k: statistics.median(r[k] for r in runs) for k in runs[0]}
        med.update(label=label, html_mib=f.stat().st_size / 2**20, best_paint_ms=min(r["first_paint_ms"] for r in runs))
        rows.append(med)
    print(
        "| graph | nodes | report | first paint (wall) | main thread busy | ELK layout | frame p50 / p95 zooming, panning |"
    )
    print("|---|---|---|---|---|---|---|")
    for r in rows:
        print(
            f"| {r['label']} | {r['nodes']:.0f} | {r['html_mib']:.1f} MiB | {r['first_paint_ms']:.0f} ms "
            f"(best {r['best_paint_ms']:.0f}) | {r['main_thread_ms']:.0f} ms | {r['layout_ms']:.0f} ms "
            f"| {r['frame_p50_ms']:.0f} / {r['frame_p95_ms']:.0f} ms |"
        )
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())

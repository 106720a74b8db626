"""Scaling: capture time, bundle size, load time and request latency against layer count.

Synthetic TFLite models of N layers (``tests.tflite_builder.chain``: CONV/ADD/RELU
blocks and a dense head) are captured for the ``c`` target; for each N this measures, each
in a fresh process: stock compile and full capture (CPU seconds), bundle size, the language
server's load time (read + validate + layer map) and memory, then in-process request latency
(definition, declaration, hover, references at random positions of every document).
Every quantity must grow at most linearly with N: the table gives the growth exponent
between successive sizes (log-log slope; 1 = linear) and the script draws docs/scaling.png.

Past the real bundles (``bench/server_scaling.py``): the largest real bundle (deeplabv3 for
``cuda`` by default, compiled first) repeated 1-10 times, each served by a fresh
``tvm-explorer serve`` process: time from ``initialized`` to the first answer, and the
server's memory (the median of three fresh servers per size; one with ``--quick``). These
are the bottom row of the plot.

Usage (the full run redraws docs/scaling.png; ~10 min on 2 cores):
    .venv/bin/python bench/scaling.py [--quick] [--layers 10,100,1000] [--server-base MODEL:TARGET|BUNDLE]
                                      [--factors 1,2,4,7,10] [--no-server] [--plot PATH] [--json out.json]
"""

from __future__ import annotations

import argparse
import math
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import benchlib as bl  # noqa: E402

LAYERS = [10, 100, 1000]
QUICK_LAYERS = [10, 30, 100]
FEATURES = ("definition", "declaration", "hover", "references")
MAX_EXPONENT = 1.15  # "at most linear", with room for measurement noise
SHARED_MODELS = Path("/work/shared/models")
FACTORS = [1, 2, 4, 7, 10]
QUICK_FACTORS = [1, 2]


def default_server_base(quick: bool) -> str:
    """The largest real bundle the project has (deeplabv3, cuda), or a test model's."""
    if quick:
        return f"{bl.MODELS / 'mobilenet_v1_fp32.tflite'}:c"
    deeplab = SHARED_MODELS / "deeplabv3.tflite"
    return f"{deeplab}:cuda" if deeplab.exists() else f"{bl.MODELS / 'hand_recrop.tflite'}:cuda"


def server_base(spec: str, workdir: Path) -> Path:
    """A bundle directory for ``spec`` (a bundle, or ``MODEL:TARGET`` compiled here)."""
    if Path(spec).is_dir():
        return Path(spec)
    from tvm_explorer.app.compile import compile_model

    model, _, target = spec.rpartition(":")
    out = workdir / f"{Path(model).stem}.{target}.bundle"
    compile_model(Path(model), out, target)
    return out


def measure(n: int, workdir: Path, reps: int, per_doc: int) -> dict:
    from tests.tflite_builder import chain

    from lsp_latency import InProcess, measure_in_process, random_positions

    model = workdir / f"chain{n}.tflite"
    chain(n, model)
    bundle = workdir / f"chain{n}.bundle"
    stock, capture = [], []
    for _rep, order in bl.rotations(["stock", "capture"], reps):
        for variant in order:
            r = bl.run_worker("compile", model=str(model), target="c", variant=variant, out=str(bundle), keep=True)
            (stock if variant == "stock" else capture).append(r)
    size = bl.dir_size(bundle)
    loads = [bl.run_worker("load", bundle=str(bundle)) for _ in range(reps)]
    server = InProcess(bundle)
    positions = random_positions(server.view, per_doc)
    lat = measure_in_process(server, positions, symbol_rounds=2)
    out = {
        "layers": n,
        "stock_cpu": bl.Summary.of(r["cpu"] for r in stock).median,
        "capture_cpu": bl.Summary.of(r["cpu"] for r in capture).median,
        "capture_ratio": bl.paired_ratios([r["cpu"] for r in stock], [r["cpu"] for r in capture]).median,
        "capture_peak": bl.Summary.of(r["peak"] for r in capture).median,
        "bundle_bytes": size,
        "documents": loads[0]["value"],
        "load_s": bl.Summary.of(r["wall"] + r["layer_map_wall"] for r in loads).median,
        "load_growth": bl.Summary.of(r["growth"] for r in loads).median,
        "latency": {f: lat[f] for f in (*FEATURES, "symbols")},
    }
    print(
        f"  {n:5d} layers: stock {out['stock_cpu']:.2f} s, capture {out['capture_cpu']:.2f} s, "
        f"bundle {bl.mib(size)}, load {out['load_s']:.2f} s, references p99 "
        f"{lat['references']['p99']:.2f} ms",
        flush=True,
    )
    return out


def exponent(a: float, b: float, na: int, nb: int) -> float:
    if a <= 0 or b <= 0:
        return float("nan")
    return math.log(b / a) / math.log(nb / na)


def plot(rows: list[dict], path: Path, server_rows: list[dict] | None = None) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    n = [r["layers"] for r in rows]
    fig, axes = plt.subplots(3 if server_rows else 2, 2, figsize=(10, 11 if server_rows else 7.5))

    def linear_guide(ax, y_last):
        # A line of slope 1 through the largest point: anything growing at most linearly stays
        # on or above it towards smaller sizes.
        ax.plot(n, [y_last * x / n[-1] for x in n], ":", color="grey", label="linear")

    ax = axes[0][0]
    ax.plot(n, [r["stock_cpu"] for r in rows], "o-", label="stock compile")
    ax.plot(n, [r["capture_cpu"] for r in rows], "s-", label="full capture")
    linear_guide(ax, rows[-1]["capture_cpu"])
    ax.set_title("Compile time (CPU s)")
    ax = axes[0][1]
    ax.plot(n, [r["bundle_bytes"] / 2**20 for r in rows], "o-", label="bundle on disk")
    ax.plot(n, [r["load_growth"] / 2**20 for r in rows], "s-", label="server memory for it")
    linear_guide(ax, rows[-1]["bundle_bytes"] / 2**20)
    ax.set_title("Bundle size / server memory (MiB)")
    ax = axes[1][0]
    ax.plot(n, [r["load_s"] for r in rows], "o-", label="load + layer map")
    linear_guide(ax, rows[-1]["load_s"])
    ax.set_title("Bundle load time (s)")
    ax = axes[1][1]
    for f, style in (("definition", "o-"), ("declaration", "v-"), ("hover", "^-"), ("references", "s-")):
        ax.plot(n, [r["latency"][f]["p99"] for r in rows], style, label=f"{f} p99")
    ax.plot(n, [r["latency"]["references"]["p50"] for r in rows], "s--", label="references p50")
    ax.set_title("Request latency, server side (ms)")
    for row in axes:
        for ax in row:
            ax.set_xscale("log")
            ax.set_yscale("log")
            ax.set_xlabel("layers")
            ax.grid(True, which="both", alpha=0.3)
    if server_rows:
        answered = [r for r in server_rows if r["first_answer_s"] is not None]
        refused = [r for r in server_rows if r["first_answer_s"] is None]
        size = [r["bundle_bytes"] / 2**20 for r in answered]
        ax = axes[2][0]
        ax.plot(size, [r["first_answer_s"] for r in answered], "o-", label="first answer after initialized")
        if answered:
            ax.plot(
                size, [answered[-1]["first_answer_s"] * x / size[-1] for x in size], ":", color="grey", label="linear"
            )
        for r in refused:
            ax.axvline(
                r["bundle_bytes"] / 2**20,
                color="red",
                ls="--",
                lw=1,
                label=f"×{r['factor']}: refused (over the reader's size limit)",
            )
        ax.axhline(1.0, color="green", ls="--", lw=1, label="goal 1 s (bundles ≤ 100 MB)")
        ax.set_title(f"Server: first answer (s), {server_rows[0]['base']} ×1..×{server_rows[-1]['factor']}")
        ax = axes[2][1]
        ax.plot(size, [r["hwm"] / 2**20 for r in answered], "s-", label="server peak RSS")
        ax.plot(size, [r["rss_at_first"] / 2**20 for r in answered], "o-", label="RSS at first answer")
        every = [r["bundle_bytes"] / 2**20 for r in server_rows]
        ax.plot(every, [1.5 * x for x in every], "--", color="green", lw=1, label="goal 1.5 × bundle")
        for r in refused:
            ax.axvline(r["bundle_bytes"] / 2**20, color="red", ls="--", lw=1, label=f"×{r['factor']}: refused")
        ax.set_title("Server memory (MiB)")
        from matplotlib.ticker import NullFormatter

        for ax in axes[2]:
            ax.set_xscale("log")
            ax.set_yscale("log")
            ax.set_xticks(every, [f"{x:.0f}" for x in every])  # one plain label per bundle
            ax.xaxis.set_minor_formatter(NullFormatter())
            ax.set_xlabel("bundle on disk (MiB; the real bundle repeated k times)")
            ax.grid(True, which="both", alpha=0.3)
    for row in axes:
        for ax in row:
            ax.legend(fontsize=8)
    fig.suptitle("TVM Explorer: scaling with model size (synthetic chain models, target c)")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    print(f"\nplot written to {path}")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help=f"layers {QUICK_LAYERS}, one repetition")
    ap.add_argument("--layers", help=f"comma-separated layer counts (default {','.join(map(str, LAYERS))})")
    ap.add_argument("--reps", type=int, help="repetitions of each compile and load (default 2; quick 1)")
    ap.add_argument("--positions", type=int, help="random positions per document (default 40; quick 15)")
    ap.add_argument("--plot", help="PNG to write (default docs/scaling.png; quick: a temporary file)")
    ap.add_argument(
        "--server-base",
        help="bundle or MODEL:TARGET repeated for the server part "
        "(default: deeplabv3:cuda from /work/shared/models; quick: mobilenet_v1_fp32:c)",
    )
    ap.add_argument("--factors", help=f"repetitions of the base bundle (default {FACTORS}; quick {QUICK_FACTORS})")
    ap.add_argument("--no-server", action="store_true", help="skip the server part")
    ap.add_argument("--json", help="also write the results to this JSON file")
    args = ap.parse_args(argv)
    layers = [int(x) for x in args.layers.split(",")] if args.layers else (QUICK_LAYERS if args.quick else LAYERS)
    reps = args.reps or (1 if args.quick else 2)
    per_doc = args.positions or (15 if args.quick else 40)
    print(f"# Scaling — {bl.machine_note()}; layers {layers}, {reps} repetition(s)\n", flush=True)
    rows = []
    with tempfile.TemporaryDirectory(prefix="tvmx-bench-") as tmp:
        for n in layers:
            rows.append(measure(n, Path(tmp), reps, per_doc))
        server_rows = None
        if not args.no_server:
            import server_scaling

            base = server_base(args.server_base or default_server_base(args.quick), Path(tmp))
            factors = (
                [int(x) for x in args.factors.split(",")]
                if args.factors
                else (QUICK_FACTORS if args.quick else FACTORS)
            )
            print(f"\n# Server past the real bundles: {base.name} repeated {factors} times\n", flush=True)
            server_rows = server_scaling.measure(base, factors, Path(tmp), 1 if args.quick else 3)
            for r in server_rows:
                r["base"] = base.name.removesuffix(".bundle")
        plot_path = (
            Path(args.plot)
            if args.plot
            else (Path(tmp).parent / "tvmx-scaling-quick.png" if args.quick else bl.ROOT / "docs" / "scaling.png")
        )
        try:
            plot(rows, plot_path, server_rows)
        except ImportError:
            print("\n(matplotlib is not installed: pip install -e '.[bench]' for the plot)")

    print("\n### Measurements\n")
    print(
        bl.table(
            [
                "layers",
                "stock CPU s",
                "capture CPU s",
                "capture/stock",
                "bundle",
                "docs",
                "load s",
                "server MiB",
                "def p99 ms",
                "decl p99",
                "hover p99",
                "refs p50 / p99 ms",
            ],
            [
                [
                    r["layers"],
                    f"{r['stock_cpu']:.2f}",
                    f"{r['capture_cpu']:.2f}",
                    f"{r['capture_ratio']:.2f}",
                    bl.mib(r["bundle_bytes"]),
                    r["documents"],
                    f"{r['load_s']:.3f}",
                    f"{r['load_growth'] / 2**20:.1f}",
                    f"{r['latency']['definition']['p99']:.2f}",
                    f"{r['latency']['declaration']['p99']:.2f}",
                    f"{r['latency']['hover']['p99']:.2f}",
                    f"{r['latency']['references']['p50']:.2f} / {r['latency']['references']['p99']:.2f}",
                ]
                for r in rows
            ],
        )
    )

    metrics = {
        "capture CPU": lambda r: r["capture_cpu"],
        "bundle size": lambda r: r["bundle_bytes"],
        "load time": lambda r: r["load_s"],
        "server memory": lambda r: r["load_growth"],
        "references p99": lambda r: r["latency"]["references"]["p99"],
        "definition p99": lambda r: r["latency"]["definition"]["p99"],
    }
    print("\n### Growth exponent between successive sizes (1.0 = linear)\n")
    head = ["metric"] + [f"{a['layers']}→{b['layers']}" for a, b in zip(rows, rows[1:])] + ["verdict"]
    body = []
    bad = []
    for name, get in metrics.items():
        exps = [exponent(get(a), get(b), a["layers"], b["layers"]) for a, b in zip(rows, rows[1:])]
        ok = all(not (e > MAX_EXPONENT) for e in exps)
        if not ok:
            bad.append(name)
        body.append([name] + [f"{e:.2f}" for e in exps] + ["at most linear" if ok else "SUPERLINEAR"])
    print(bl.table(head, body))
    print("\nScaling: " + ("every quantity grows at most linearly" if not bad else "superlinear: " + ", ".join(bad)))
    if server_rows:
        print("\n### Server past the real bundles (first answer after `initialized`, memory)\n")
        server_scaling.report(server_rows)
        answered = [r for r in server_rows if r["first_answer_s"] is not None]
        for name, get in (("first answer", lambda r: r["first_answer_s"]), ("server peak RSS", lambda r: r["hwm"])):
            exps = [
                exponent(get(a), get(b), a["bundle_bytes"], b["bundle_bytes"]) for a, b in zip(answered, answered[1:])
            ]
            print(
                f"{name}: growth exponent against bundle size "
                + ", ".join(f"{e:.2f}" for e in exps)
                + (" (at most linear)" if all(not (e > MAX_EXPONENT) for e in exps) else " (SUPERLINEAR)")
            )
    bl.save_json(args.json, {"layers": rows, "server": server_rows})
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""A layer's history through the passes (issue 41): ``tvmExplorer/layerHistory`` latency on a
large bundle, side by side with ``textDocument/references`` (the request that also walks every
pass document's places of a layer), at the same positions, in one run.

Positions: every layer's entry in the model document (a layer's history), then random
non-blank positions of the final TIR and the generated code (a statement's layer, or a fused
kernel's whole group). Every history is asked for the first time (histories are remembered per
layer set: a cold answer is what a user waits for), both handlers in process on one loaded
bundle (position conversion, lookup, answer conversion), order rotating per position. The
line indexes are built first, as the server does in the background right after a load.

Also: nothing is added to the bundle's load (the history room is not imported by a load; the
load is timed), and the graph document's pass-slider data once.

Goals: layerHistory p99 <= 200 ms (cold, every layer of the 60 MiB CUDA bundle).

Usage:
    .venv/bin/python bench/layer_history.py [--bundle DIR] [--positions N] [--json out.json]
(without --bundle: tests/models/mobilenet_v3_small_int8.tflite compiled for cuda, 60 MiB.)
"""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import benchlib as bl  # noqa: E402
import lsp_latency as lat  # noqa: E402

GOAL_P99_MS = 200.0


def positions(server: lat.InProcess, per_document: int, seed: int = 0) -> list[tuple[str, int, int]]:
    """Every layer entry of the model document, then random non-blank positions of the final
    TIR and the generated code (shuffled)."""
    from tvm_explorer.navigation.stage_sync import stage_documents

    view = server.view
    model = view.model_path
    lines = view.line_index(model, "utf-16")
    out = [(model, *lines.position(p.start)) for places in view.layer_map.model_places.values() for p in places]
    documents = [doc.path for doc in stage_documents(view)[2:]]
    return out + lat.random_positions(view, per_document, seed, documents, keep=view.bundle.origins_at)


def main() -> None:
    args = lat.bundle_bench_args(__doc__, 100, "random positions per code/TIR stage document")
    from lsprotocol import types

    with tempfile.TemporaryDirectory(prefix="tvmx-history-") as tmp:
        root = lat.bundle_or_mobilenet_cuda(args.bundle, tmp)
        t0 = time.perf_counter()
        server = lat.InProcess(root)  # load, layer map, as the server before its first answer
        load_s = time.perf_counter() - t0
        history_at_load = sorted(m for m in sys.modules if m.startswith("tvm_explorer.history"))
        t0 = time.perf_counter()
        server.session.warm_lines(server.view)  # the server's warm-up after a load
        warm_s = time.perf_counter() - t0
        from tvm_explorer.lsp.features.history import LayerHistory  # after the load: not part of it
        from tvm_explorer.lsp.shared import OffLoop

        history = LayerHistory(server.session)

        def layer_history(p):
            got = history.layer_history(types.TextDocumentPositionParams(p.text_document, p.position))
            return got.finish() if isinstance(got, OffLoop) else got  # as the server's worker thread does

        handlers = {
            "layerHistory": layer_history,
            "references": server.handlers["references"],
        }
        samples: dict[str, list[int]] = {name: [] for name in handlers}
        cpu: dict[str, list[int]] = {name: [] for name in handlers}  # this thread's CPU time: load aside
        sizes: dict[str, list[int]] = {name: [] for name in handlers}
        steps: list[int] = []
        names = list(handlers)
        seen: set[tuple[int, ...]] = set()
        for i, (path, line, col) in enumerate(positions(server, args.positions)):
            params = server.params("references", server.uri(path), line, col)
            for name in names[i % 2 :] + names[: i % 2]:
                t0, c0 = time.perf_counter_ns(), time.thread_time_ns()
                got = handlers[name](params)
                elapsed, used = time.perf_counter_ns() - t0, time.thread_time_ns() - c0
                if name == "layerHistory":
                    group = tuple(lay.id for lay in got.layers)
                    if not group or group in seen:
                        continue  # only first asks: a repeated one is answered from memory
                    seen.add(group)
                    steps.append(len(got.steps))
                    sizes[name].append(sum(len(s.before.ranges) + len(s.after.ranges) for s in got.steps))
                else:
                    sizes[name].append(lat.answer_size(got))
                samples[name].append(elapsed)
                cpu[name].append(used)
        summary = {name: bl.latency_summary(s) for name, s in samples.items()}
        cpu_summary = {name: bl.latency_summary(s) for name, s in cpu.items()}
        ratio = {q: summary["layerHistory"][q] / summary["references"][q] for q in ("p50", "p99")}
        rows = [
            [
                name,
                s["n"],
                f"{s['p50']:.2f}",
                f"{s['p99']:.2f}",
                f"{s['max']:.1f}",
                f"{cpu_summary[name]['p50']:.2f}",
                f"{cpu_summary[name]['p99']:.2f}",
                max(sizes[name], default=0),
            ]
            for name, s in summary.items()
        ]
        print(
            bl.table(["request", "n", "p50 ms", "p99 ms", "max ms", "CPU p50 ms", "CPU p99 ms", "largest answer"], rows)
        )
        p99 = summary["layerHistory"]["p99"]
        print(
            f"\nlayerHistory (first ask of each of {len(seen)} layer sets, {min(steps)}–{max(steps)} steps each) "
            f"p99 {p99:.1f} ms (goal ≤ {GOAL_P99_MS:g} ms: {bl.verdict(p99, GOAL_P99_MS)}); "
            f"layerHistory / references: p50 {ratio['p50']:.1f}×, p99 {ratio['p99']:.1f}×; CPU time p99 "
            f"{cpu_summary['layerHistory']['p99']:.1f} ms ({bl.verdict(cpu_summary['layerHistory']['p99'], GOAL_P99_MS)}: "
            "what the wall time would be on an idle core)"
        )
        print(
            f"load (documents checked, layer map) {load_s:.2f} s; history modules imported by it: "
            f"{history_at_load or 'none'}; line indexes warmed in {warm_s:.2f} s"
        )
        from tvm_explorer.history.pipeline import pipeline_states

        t0 = time.perf_counter()
        states = pipeline_states(server.view)
        slider_s = time.perf_counter() - t0
        print(f"pass slider data (graph document 'pipeline'): {len(states['passes'])} passes in {slider_s:.2f} s")
        bl.save_json(
            args.json,
            {
                "latency": summary,
                "cpu": cpu_summary,
                "ratio": ratio,
                "load_s": load_s,
                "history_at_load": history_at_load,
                "warm_lines_s": warm_s,
                "slider_s": slider_s,
            },
        )


if __name__ == "__main__":
    main()

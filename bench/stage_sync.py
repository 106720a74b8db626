"""Stages side by side (issue 29): ``tvmExplorer/stageRanges`` latency on a large bundle, side by
side with ``textDocument/references`` (the request answering the same map of places), at the
same random positions of the stage documents, in one run.

Both handlers are called in process on one loaded bundle (the code the pygls handlers call:
position conversion, lookup, answer conversion), in an order rotating per position. Goals:
stageRanges p99 <= 20 ms (a cursor move must repaint before the next one), and no slower than
references at the same positions (p50 and p99 ratio <= 1.5x).

Usage:
    .venv/bin/python bench/stage_sync.py [--bundle DIR] [--positions N] [--json out.json]
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

GOAL_P99_MS = 20.0
GOAL_RATIO = 1.5


def stage_positions(server: lat.InProcess, per_document: int, seed: int = 0) -> list[tuple[str, int, int]]:
    """Random non-blank positions of the stage documents (what a side-by-side cursor is on)."""
    from tvm_explorer.navigation.stage_sync import stage_documents

    return lat.random_positions(server.view, per_document, seed, [doc.path for doc in stage_documents(server.view)[:4]])


def main() -> None:
    args = lat.bundle_bench_args(__doc__, 500, "per stage document")
    from lsprotocol import types

    from tvm_explorer.lsp.features.stage_sync import StageSync

    with tempfile.TemporaryDirectory(prefix="tvmx-stages-") as tmp:
        root = lat.bundle_or_mobilenet_cuda(args.bundle, tmp)
        server = lat.InProcess(root)
        stages = StageSync(server.session)
        handlers = {
            "stageRanges": lambda p: stages.stage_ranges(types.TextDocumentPositionParams(p.text_document, p.position)),
            "references": server.handlers["references"],
        }
        samples: dict[str, list[int]] = {name: [] for name in handlers}
        sizes: dict[str, list[int]] = {name: [] for name in handlers}
        names = list(handlers)
        for i, (path, line, col) in enumerate(stage_positions(server, args.positions)):
            params = server.params("references", server.uri(path), line, col)
            for name in names[i % 2 :] + names[: i % 2]:
                t0 = time.perf_counter_ns()
                got = handlers[name](params)
                samples[name].append(time.perf_counter_ns() - t0)
                sizes[name].append(
                    sum(len(d.ranges) for d in got.documents) if name == "stageRanges" else lat.answer_size(got)
                )
        summary = {name: bl.latency_summary(s) for name, s in samples.items()}
        ratio = {q: summary["stageRanges"][q] / summary["references"][q] for q in ("p50", "p99")}
        rows = [
            [name, s["n"], f"{s['p50']:.3f}", f"{s['p99']:.3f}", f"{s['max']:.2f}", max(sizes[name])]
            for name, s in summary.items()
        ]
        print(bl.table(["request", "n", "p50 ms", "p99 ms", "max ms", "largest answer"], rows))
        p99 = summary["stageRanges"]["p99"]
        print(
            f"\nstageRanges p99 {p99:.2f} ms (goal ≤ {GOAL_P99_MS:g} ms: {bl.verdict(p99, GOAL_P99_MS)}); "
            f"stageRanges / references: p50 {ratio['p50']:.2f}×, p99 {ratio['p99']:.2f}× "
            f"(goal ≤ {GOAL_RATIO:g}×: {bl.verdict(max(ratio.values()), GOAL_RATIO)})"
        )
        bl.save_json(args.json, {"latency": summary, "ratio": ratio})


if __name__ == "__main__":
    main()

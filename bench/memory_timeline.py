"""The memory timeline's cost (issue 40): its analysis at capture against the compile's time, on
a 32-layer Llama-style model, and the server's start-up with and without ``memory.json``.

The model is ``llm_scale.py``'s (Hugging Face ``LlamaForCausalLM`` from a config with random
weights, exported with ``torch.export``; nothing downloaded). One capture (``_worker.py
compile``, a fresh process) writes the bundle; ``memory.json`` records the analysis's own time
(``analysis_ms``: reading the plan after ``KillAfterLastUse``, the kernels' scratch from the
final TIR, the timeline, the allocators replayed), and its serialization is timed here on the
same document. Then the bundle is loaded (``_worker.py load``: the server's load, a fresh
process each) with and without its ``memory.json``, alternating, side by side: the timeline
is read only when asked, so the two should not differ. Last, ``tvm-explorer memory`` on it.

    nice .venv/bin/python bench/memory_timeline.py [--layers 32] [--target c] [--reps 3] [--json FILE]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import benchlib as bl  # noqa: E402
from llm_scale import export_llama  # noqa: E402
from tvm_explorer.bundle.manifest import read_manifest  # noqa: E402


def _linked_copy(src: Path, dst: Path, leave_out: str) -> Path:
    """``src`` as hard links at ``dst``, without the file ``leave_out`` (and not listing it)."""
    for here, _dirs, files in os.walk(src):
        rel = Path(here).relative_to(src)
        (dst / rel).mkdir(parents=True, exist_ok=True)
        for name in files:
            if str(rel / name) not in (leave_out, "manifest.json"):
                os.link(Path(here) / name, dst / rel / name)
    manifest = read_manifest(src)
    manifest["files"] = [f for f in manifest.get("files", []) if f != leave_out]
    (dst / "manifest.json").write_text(json.dumps(manifest))
    return dst


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--target", default="c")
    ap.add_argument("--layers", type=int, default=32)
    ap.add_argument("--reps", type=int, default=3, help="loads with and without memory.json (each)")
    ap.add_argument("--quick", action="store_true", help="4 layers, 2 loads each")
    ap.add_argument("--json")
    args = ap.parse_args()
    if args.quick:
        args.layers, args.reps = 4, 2
    print(bl.machine_note(), flush=True)
    work = Path(tempfile.mkdtemp(prefix="tvmx-memory-bench-"))
    try:
        model = work / "llama.pt2"
        info = export_llama(model, args.layers)
        print(f"model: {info['layers']} layers, {info['fx_nodes']} FX nodes, .pt2 {bl.mib(model.stat().st_size)}")
        bundle = work / "llama.bundle"
        cap = bl.run_worker(
            "compile", model=str(model), target=args.target, variant="capture", out=str(bundle), keep=True
        )
        doc = json.loads((bundle / "memory.json").read_text())
        t0 = time.perf_counter()
        json.dumps(doc, indent=1)
        write_ms = (time.perf_counter() - t0) * 1e3
        analysis_ms = doc["analysis_ms"]
        costs = json.loads((bundle / "costs.json").read_text())
        passes_ms = costs["totals"]["compile_ms"]
        ours_ms = analysis_ms + write_ms
        print(
            f"  capture: wall {cap['wall']:.1f} s, CPU {cap['cpu']:.1f} s (TVM's passes {passes_ms / 1e3:.1f} s); "
            f"memory analysis {analysis_ms:.0f} ms + writing {write_ms:.0f} ms",
            flush=True,
        )
        bare = _linked_copy(bundle, work / "bare.bundle", "memory.json")
        loads: dict[str, list[float]] = {"with": [], "without": []}
        rss: dict[str, list[int]] = {"with": [], "without": []}
        for _ in range(args.reps):
            for name, path in (("with", bundle), ("without", bare)):
                got = bl.run_worker("load", bundle=str(path))
                loads[name].append(got["wall"])
                rss[name].append(got["rss_loaded"])
        t0 = time.perf_counter()
        proc = subprocess.run(
            [sys.executable, "-m", "tvm_explorer", "memory", str(bundle)], capture_output=True, text=True, check=True
        )
        cli_s = time.perf_counter() - t0
        peak = doc["peak"]
        rows = [
            [
                "memory analysis at capture (ms)",
                f"{analysis_ms:.0f}",
                f"{100 * analysis_ms / (cap['wall'] * 1e3):.2f} % of the capture's wall",
            ],
            [
                "  + writing memory.json (ms)",
                f"{write_ms:.0f}",
                f"{100 * ours_ms / (cap['cpu'] * 1e3):.2f} % of its CPU (both)",
            ],
            ["  against TVM's passes alone", f"{passes_ms:.0f}", f"{100 * ours_ms / passes_ms:.2f} %"],
            [
                "memory.json",
                bl.mib((bundle / "memory.json").stat().st_size),
                f"{len(doc['steps'])} steps, {len(doc['tensors'])} tensors, {len(doc['storages'])} storages",
            ],
            [
                "bundle load, with / without memory.json (s)",
                f"{statistics.median(loads['with']):.2f} / {statistics.median(loads['without']):.2f}",
                f"{statistics.median(loads['with']) / statistics.median(loads['without']):.2f}× (median of {args.reps} each)",
            ],
            [
                "RSS after the load, with / without",
                f"{bl.mib(statistics.median(rss['with']))} / {bl.mib(statistics.median(rss['without']))}",
                "",
            ],
            ["tvm-explorer memory (s, whole process)", f"{cli_s:.2f}", ""],
            [
                "peak (plan)",
                bl.mib(peak["bytes"]),
                f"step {peak['step']}: {doc['steps'][peak['step']]['callee']}" if peak["step"] is not None else "",
            ],
        ]
        print()
        print(bl.table([f"{args.layers}-layer Llama ({args.target})", "value", "ratio / note"], rows))
        print()
        print("\n".join(proc.stdout.splitlines()[:12]))
        verdict = bl.verdict(ours_ms / (cap["wall"] * 1e3), 0.10)
        print(f"\nanalysis under 10 % of the compile: {verdict}")
        bl.save_json(
            args.json,
            {
                "model": info,
                "capture": cap,
                "analysis_ms": analysis_ms,
                "write_ms": write_ms,
                "passes_ms": passes_ms,
                "loads": loads,
                "rss": rss,
                "cli_s": cli_s,
                "peak": peak,
            },
        )
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""``--sass`` cost (issue 43 goal 5): what it adds to a compile is nvcc + nvdisasm themselves plus
at most 20 % for joining the listing to layers. Measured side by side in one run on a large CUDA
bundle: the tools alone (``sass.build.disassemble``) and the join alone (``machine_code`` given
that listing: parsing, the CUDA index by line, the document and ``sass.json``), repeated in turn.

Usage:
    .venv/bin/python bench/sass.py [--bundle DIR] [--arch sm_90] [--reps 3] [--json out.json]
(without --bundle: tests/models/mobilenet_v3_small_int8.tflite compiled for cuda, 60 MiB.)
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import benchlib as bl  # noqa: E402

GOAL_RATIO = 0.20
ROOT = Path(__file__).resolve().parents[1]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bundle", type=Path)
    ap.add_argument("--arch", default="sm_90")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--json")
    args = ap.parse_args()
    from tvm_explorer.bundle.index import Range
    from tvm_explorer.bundle.reader import Bundle
    from tvm_explorer.sass.build import disassemble
    from tvm_explorer.sass.machine import machine_code

    bundle_dir = args.bundle
    if bundle_dir is None:
        bundle_dir = Path(tempfile.mkdtemp(prefix="bench-sass-")) / "mnv3.bundle"
        model = ROOT / "tests/models/mobilenet_v3_small_int8.tflite"
        subprocess.run(
            [
                sys.executable,
                "-m",
                "tvm_explorer",
                "compile",
                str(model),
                "-o",
                str(bundle_dir),
                "--target",
                "cuda",
                "--progress",
                "none",
            ],
            check=True,
        )
    bundle = Bundle(bundle_dir)
    cuda = bundle.text("code/device.cu")
    ranges = [
        Range(*r) for r in json.loads((bundle_dir / "index.json").read_text())["documents"]["code/device.cu"]["ranges"]
    ]

    def layers_of(set_id: int) -> tuple[int, ...]:
        return tuple(o.layer.id for o in bundle.origins(set_id))

    tools_s, join_s = [], []
    listing = None
    for _ in range(args.reps):
        t = time.perf_counter()
        listing = disassemble(cuda, args.arch)
        tools_s.append(time.perf_counter() - t)
        t = time.perf_counter()
        got = machine_code(cuda, ranges, layers_of, args.arch, listing=listing)
        join_s.append(time.perf_counter() - t)
    instructions = sum(k["instructions"] for k in got.section["kernels"])
    ratios = [j / t for j, t in zip(join_s, tools_s)]
    result = {
        "bundle": str(bundle_dir),
        "cuda_bytes": len(cuda.encode()),
        "kernels": len(got.section["kernels"]),
        "instructions": instructions,
        "tools_s": tools_s,
        "join_s": join_s,
        "join_over_tools": ratios,
        "goal": GOAL_RATIO,
    }
    print(bl.machine_note())
    print(
        bl.table(
            ["", "median s", "runs"],
            [
                ["nvcc + nvdisasm", f"{sorted(tools_s)[len(tools_s) // 2]:.2f}", " ".join(f"{x:.2f}" for x in tools_s)],
                ["join to layers", f"{sorted(join_s)[len(join_s) // 2]:.2f}", " ".join(f"{x:.2f}" for x in join_s)],
            ],
        )
    )
    median_ratio = sorted(ratios)[len(ratios) // 2]
    print(
        f"{len(cuda.encode()) / 2**20:.1f} MiB of CUDA, {len(got.section['kernels'])} kernels, {instructions} instructions; "
        f"join / tools = {median_ratio:.1%} (goal <= {GOAL_RATIO:.0%}): {bl.verdict(median_ratio, GOAL_RATIO)}"
    )
    bl.save_json(args.json, result)


if __name__ == "__main__":
    main()

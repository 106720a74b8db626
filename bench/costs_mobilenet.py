"""The "done means" check of costs (issue 12): compile mobilenet_v1_fp32 for c and llvm with
``--profile``, print each bundle's top layers (``tvm-explorer costs``) and check that the
convolutions are on top and that the times add up.

    .venv/bin/python bench/costs_mobilenet.py [--repeat N] [--out DIR]

Takes minutes (the untuned kernels run for seconds per inference on a loaded 2-core machine);
not part of the test suite.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
MODEL = REPO / "tests" / "models" / "mobilenet_v1_fp32.tflite"


def cli(*args) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "tvm_explorer", *map(str, args)], capture_output=True, text=True, check=True
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()
    out = args.out or Path(tempfile.mkdtemp(prefix="costs-bench-"))
    out.mkdir(parents=True, exist_ok=True)
    failures = []
    for target in ("c", "llvm"):
        bundle = out / f"mobilenet_v1.{target}.bundle"
        started = time.perf_counter()
        cli("compile", MODEL, "-o", bundle, "--target", target, "--profile", "--repeat", args.repeat)
        took = time.perf_counter() - started
        table = cli("costs", bundle).stdout.splitlines()
        costs = json.loads(cli("costs", bundle, "--json").stdout)
        print(f"== {target}: compile + profile {took:.0f} s, {bundle}")
        print("\n".join(table[:12]))
        layers = costs["layers"]
        top = [lay["opcode"] for lay in layers[:5]]
        total = costs["total_ms"]
        attributed = sum(lay["time_ms"] for lay in layers)
        profile = costs["profile"]
        print(
            f"   top 5: {top}; layers add up to {attributed / total:.1%} of the total; "
            f"fastest instrumented run / fastest plain run = "
            f"{profile['total_min_ms'] / profile['plain_run_min_ms']:.3f}\n"
        )
        if not all(op in ("CONV_2D", "DEPTHWISE_CONV_2D") for op in top):
            failures.append(f"{target}: top layers {top}")
        if abs(attributed - total) > 0.1 * total:
            failures.append(f"{target}: layers {attributed:.1f} ms vs total {total:.1f} ms")
    for f in failures:
        print("FAILED:", f)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())

"""Real MetaSchedule tuning of a MobileNet-class model for llvm (issue 42, item 5): compile with
``--tune TRIALS`` (optionally ``--tune-only`` a few layers), then print the trials spent, the
minutes, and per kernel and layer the default vs tuned time measured side by side by the
ledger, the speedup, and the time left on the table (docs/tuning.md).

    .venv/bin/python bench/tune_mobilenet.py [--trials 64] [--tune-only 0,1] [--out DIR] [--json FILE]

Minutes to hours (each builder worker registers TVM's tensor intrinsics for about 9 s on a
loaded 2-core machine, then builds); not part of the test suite. A second run with the same ``--out`` reuses the
database (no trials): a way to re-time the same schedules.
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


def cli(*args, check: bool = True) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "tvm_explorer", *map(str, args)], capture_output=True, text=True, check=check
    )


def table(ledger: dict) -> list[str]:
    """Per kernel: state, trials, default and tuned time (side by side), speedup, layers."""
    head = f"{'kernel':<44} {'state':<13} {'trials':>6} {'default us':>11} {'tuned us':>10} {'speedup':>8}  layers"
    lines = [head, "-" * len(head)]
    for k in sorted(ledger["kernels"], key=lambda k: (k["state"] != "tuned", k["kernel"])):
        speed = "-" if k["speedup"] is None else f"{k['speedup']:.2f}x"
        d = "-" if k["default_us"] is None else f"{k['default_us']:.1f}"
        t = "-" if k["tuned_us"] is None else f"{k['tuned_us']:.1f}"
        lines.append(
            f"{k['kernel'][:44]:<44} {k['state']:<13} {k['trials']:>6} {d:>11} {t:>10} {speed:>8}  "
            + ", ".join(k["layer_names"])[:60]
        )
    return lines


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", type=Path, default=MODEL)
    parser.add_argument("--trials", type=int, default=64)
    parser.add_argument("--tune-only", default=None, help="layers to tune (names or ids, comma-separated)")
    parser.add_argument("--builder-timeout", type=float, default=600)
    parser.add_argument("--out", type=Path, default=None)
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args()
    out = args.out or Path(tempfile.mkdtemp(prefix="tune-bench-"))
    out.mkdir(parents=True, exist_ok=True)
    bundle, db = out / f"{args.model.stem}.tuned.bundle", out / "tuning-db"
    command = ["compile", args.model, "--target", "llvm", "--tune", args.trials, "--tuning-db", db]
    command += ["--tune-builder-timeout", args.builder_timeout, "--timeout", 0, "-o", bundle]
    if args.tune_only:
        command += ["--tune-only", args.tune_only]
    started = time.perf_counter()
    cli(*command)
    minutes = (time.perf_counter() - started) / 60
    shown = cli("tuning", bundle, check=False)
    ledger = json.loads(cli("tuning", bundle, "--json", check=False).stdout)
    tuned = [k for k in ledger["kernels"] if k["state"] == "tuned"]
    trials = sum(k["trials"] for k in ledger["kernels"])
    print(
        f"== {args.model.name}, llvm: --tune {args.trials}"
        + (f" --tune-only {args.tune_only}" if args.tune_only else "")
        + f"; {trials} trials spent, {ledger['tuning_seconds'] / 60:.1f} min tuning, {minutes:.1f} min whole compile; "
        f"{ledger['verdict']['message']}"
    )
    print("\n".join(table(ledger)))
    left = shown.stdout[shown.stdout.find("Time left on the table") :].splitlines()
    print("\n" + "\n".join(left[:14]))
    if args.json:
        args.json.write_text(
            json.dumps({"trials": trials, "minutes": minutes, "bundle": str(bundle), "ledger": ledger}, indent=1)
        )
    return 0 if tuned else 1


if __name__ == "__main__":
    sys.exit(main())

"""How long a stopped compile runs on: SIGTERM to ``tvm-explorer compile`` (what the editor's
Cancel sends) at a pass, until the compiling child is gone — for this checkout and, with
``--before CHECKOUT``, another one, side by side in one run (issue 38: the goal is under 1 s
at any point; before, a child inside a long C++ pass ran on until the 10 s grace).

Points: between passes (at LegalizeOps) and as printing begins, on small_cnn_fp32.tflite;
1 s into FoldConstant, on tests/tflite_builder.py's ``constant_chain`` of 120 ops (a
FoldConstant of many seconds). Each
repetition runs every variant in a rotating order (bench/benchlib.py).

    .venv/bin/python bench/stop_latency.py [--before /tmp/before-checkout] [--reps 3] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import benchlib as bl

POINTS = [
    ("between passes", "small", "relax", "LegalizeOps", 0.0),
    ("inside FoldConstant", "chain", "relax", "FoldConstant", 1.0),
    ("printing", "small", "code", None, 0.0),
]


def _env(checkout: Path | None) -> dict:
    env = dict(os.environ)
    if checkout is not None:
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(checkout / "server"), env.get("PYTHONPATH")]))
    return env


def _stop_once(model: Path, out: Path, env: dict, stage: str, name: str | None, delay: float) -> float:
    """Seconds from SIGTERM to the child gone (the child is killed at 30 s if still there)."""
    from tests.processes import gone

    proc = subprocess.Popen(
        [sys.executable, "-m", "tvm_explorer", "compile", str(model), "-o", str(out), "--progress", "json"],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        env=env,
    )
    child = None
    for line in proc.stdout:
        if child is None:
            kids = Path(f"/proc/{proc.pid}/task/{proc.pid}/children").read_text().split()
            child = int(kids[0]) if kids else None
        event = json.loads(line) if line.startswith("{") else {}
        if event.get("event") == "start" and event["stage"] == stage and name in (None, event["name"]):
            break
    time.sleep(delay)
    t0 = time.perf_counter()
    proc.send_signal(signal.SIGTERM)
    while child is not None and not gone(child):
        if time.perf_counter() - t0 > 30:
            os.kill(child, signal.SIGKILL)
        time.sleep(0.005)
    took = time.perf_counter() - t0
    proc.communicate()
    return took


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--before", type=Path, help="another checkout to measure beside this one")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--json")
    args = ap.parse_args()
    sys.path.insert(0, str(bl.ROOT))
    from tests.tflite_builder import constant_chain

    work = Path(tempfile.mkdtemp(prefix="stop-latency-"))
    models = {"small": bl.MODELS / "small_cnn_fp32.tflite", "chain": work / "chain.tflite"}
    constant_chain(models["chain"], 120)
    variants = {"this": _env(None)}
    if args.before:
        variants["before"] = _env(args.before)
    results: dict = {point[0]: {v: [] for v in variants} for point in POINTS}
    try:
        for _rep, order in bl.rotations(list(variants), args.reps):
            for variant in order:
                for label, model, stage, name, delay in POINTS:
                    out = work / f"{variant}.bundle"
                    took = _stop_once(models[model], out, variants[variant], stage, name, delay)
                    results[label][variant].append(took)
                    shutil.rmtree(out, ignore_errors=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    rows = []
    for label, by_variant in results.items():
        row = [label] + [f"{min(v):.2f}–{max(v):.2f} s" for v in by_variant.values()]
        if "before" in by_variant:
            ratio = bl.paired_ratios(by_variant["before"], by_variant["this"])
            row.append(ratio.fmt(2, "×"))
        rows.append(row)
    headers = ["SIGTERM", *(f"{v}: child gone after" for v in variants)] + (["this / before"] if args.before else [])
    print(bl.machine_note())
    print(bl.table(headers, rows))
    bl.save_json(args.json, results)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""Compile every .tflite, .onnx and .pt2 model of a folder for some targets and print a Markdown table of the
worst provenance coverage per stage (used to produce the numbers in docs/provenance.md).

    .venv/bin/python scripts/coverage_report.py tests/models --targets c cuda
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from tvm_explorer.bundle.reader import Bundle


def _worst(bundle: Path) -> dict[str, tuple[int, int]]:
    """Per stage (and per generated-code kind): the (attributed, units) of the worst pass."""
    worst: dict[str, tuple[int, int]] = {}
    for p in Bundle(bundle).manifest["passes"]:
        stage = p["stage"] if p["stage"] != "code" else p["name"]
        units, attributed = p["units"], p["attributed"]
        if not units:
            continue
        if stage not in worst or attributed / units < worst[stage][0] / worst[stage][1]:
            worst[stage] = (attributed, units)
    return worst


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("folder")
    parser.add_argument("--targets", nargs="+", default=["c", "cuda"])
    args = parser.parse_args()
    print("| model | target | time | Relax bindings (worst pass) | TIR stores (worst pass) | generated lines |")
    print("|---|---|---|---|---|---|")
    with tempfile.TemporaryDirectory() as tmp:
        models = [m for ext in ("tflite", "onnx", "pt2") for m in Path(args.folder).glob(f"*.{ext}")]
        for model in sorted(models):
            for target in args.targets:
                out = Path(tmp) / f"{model.stem}.{target}"
                started = time.perf_counter()
                proc = subprocess.run(
                    [sys.executable, "-m", "tvm_explorer", "compile", str(model), "-o", str(out), "--target", target],
                    capture_output=True,
                    text=True,
                )
                took = time.perf_counter() - started
                if proc.returncode != 0:
                    msg = proc.stderr.strip().split("\n")[-1][:90]
                    print(f"| `{model.name}` | {target} | - | import fails: {msg} | | |")
                    continue
                w = _worst(out)

                def cell(key):
                    a, u = w.get(key, (0, 0))
                    return f"{100.0 * a / u:.1f}% ({a}/{u})" if u else "-"

                code = "codegen (cuda)" if target == "cuda" else "codegen (c)"
                print(
                    f"| `{model.name}` | {target} | {took:.1f}s | {cell('relax')} | {cell('tir')} | "
                    f"{cell(code) if code in w else '-'} |"
                )
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Bundles of this checkout against another's, file by file: what a change did to the output.

Compiles the same six models with this checkout and with ``--before CHECKOUT`` (its
``server/`` first on ``PYTHONPATH``, the same TVM), then compares the two bundles of each
model byte by byte. A file that differs is shown with what differs in it, read as JSON where
it is JSON: the fields whose values differ (measured times are expected to), so that a reader
sees at once whether anything but timings moved. Files on one side only are listed.

    .venv/bin/python bench/bundle_identity.py --before /tmp/before-checkout [--json out.json]

The six: small_cnn fp32 to ``c``, small_cnn int8 to ``llvm``, mobilenet_v3_small int8 to
``cuda`` (code only, no GPU needed), light_squeezenet ``.onnx``, sine ``.tflite`` and a small
PyTorch module exported here to ``.pt2``.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import benchlib as bl  # noqa: E402

CASES = [
    ("small_cnn_fp32.tflite", "c"),
    ("small_cnn_int8.tflite", "llvm"),
    ("mobilenet_v3_small_int8.tflite", "cuda"),
    ("light_squeezenet.onnx", "llvm"),
    ("sine_float.tflite", "llvm"),
    ("module.pt2", "llvm"),
]


def _pt2(folder: Path) -> Path:
    import torch

    class Small(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = torch.nn.Linear(16, 8)

        def forward(self, x):
            return torch.softmax(torch.relu(self.fc(x)), dim=-1)

    torch.manual_seed(0)
    path = folder / "module.pt2"
    torch.export.save(torch.export.export(Small().eval(), (torch.randn(2, 16),)), str(path))
    return path


def _compile(checkout: Path | None, model: Path, target: str, out: Path) -> None:
    env = dict(os.environ)
    if checkout is not None:
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(checkout / "server"), env.get("PYTHONPATH")]))
    cmd = [sys.executable, "-m", "tvm_explorer", "compile", str(model), "--target", target, "-o", str(out)]
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, cwd=out.parent)
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed ({checkout or 'this checkout'}):\n{proc.stderr}")


def _json_differences(a, b, path: str = "") -> list[str]:
    if isinstance(a, dict) and isinstance(b, dict):
        out = []
        for key in sorted(set(a) | set(b), key=str):
            where = f"{path}.{key}" if path else str(key)
            if key not in a or key not in b:
                out.append(f"{where} ({'after only' if key not in a else 'before only'})")
            else:
                out += _json_differences(a[key], b[key], where)
        return out
    if isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        out = []
        for i, (x, y) in enumerate(zip(a, b)):
            out += _json_differences(x, y, f"{path}[{i}]")
        return out
    return [] if a == b else [path or "(value)"]


def _generic(fields: list[str]) -> list[str]:
    """Field paths with list indices folded (``layers[3].time_ms`` -> ``layers[].time_ms``)."""
    import re

    return sorted({re.sub(r"\[\d+\]", "[]", f) for f in fields})


def compare(before: Path, after: Path) -> dict:
    files_b = {p.relative_to(before).as_posix() for p in before.rglob("*") if p.is_file()}
    files_a = {p.relative_to(after).as_posix() for p in after.rglob("*") if p.is_file()}
    differing = {}
    for name in sorted(files_a & files_b):
        x, y = (before / name).read_bytes(), (after / name).read_bytes()
        if x == y:
            continue
        if name.endswith(".json"):
            try:
                differing[name] = _generic(_json_differences(json.loads(x), json.loads(y)))
                continue
            except ValueError:
                pass
        lines_x, lines_y = x.decode(errors="replace").splitlines(), y.decode(errors="replace").splitlines()
        changed = [i + 1 for i, (p, q) in enumerate(zip(lines_x, lines_y)) if p != q]
        differing[name] = [
            f"{len(changed)} line(s) differ, first {changed[:3]}; {len(lines_x)} vs {len(lines_y)} lines"
        ]
    return {
        "identical": len(files_a & files_b) - len(differing),
        "differing": differing,
        "before_only": sorted(files_b - files_a),
        "after_only": sorted(files_a - files_b),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--before", type=Path, required=True, help="another checkout of this repository")
    ap.add_argument("--json")
    args = ap.parse_args()
    results = {}
    with tempfile.TemporaryDirectory(prefix="bundle-identity-") as tmp:
        root = Path(tmp)
        for model_name, target in CASES:
            model = _pt2(root) if model_name.endswith(".pt2") else bl.MODELS / model_name
            key = f"{model_name} -> {target}"
            outs = {}
            for side, checkout in (("before", args.before.resolve()), ("after", None)):
                outs[side] = root / side / f"{model.stem}-{target}.bundle"
                outs[side].parent.mkdir(exist_ok=True)
                _compile(checkout, model, target, outs[side])
            results[key] = compare(outs["before"], outs["after"])
            r = results[key]
            print(f"{key}: {r['identical']} files identical, {len(r['differing'])} differ")
            for name, what in r["differing"].items():
                print(f"  {name}: {', '.join(what[:12])}{' …' if len(what) > 12 else ''}")
            for name in r["before_only"]:
                print(f"  only before: {name}")
            for name in r["after_only"]:
                print(f"  only after:  {name}")
    print(bl.machine_note())
    bl.save_json(args.json, results)


if __name__ == "__main__":
    main()

"""Hostile ``.pt2`` archives for the tests: a real exported program saved by
``torch.export.save``, rewritten so one entry is a pickle whose ``__reduce__`` creates a marker
file and then evaluates to a valid value (so a trusted load goes on to compile).

``python hostile_pt2.py OUT.pt2 MARKER [weight|inputs]`` writes one (the e2e tests use it).
"""

from __future__ import annotations

import io
import json
import sys
import zipfile
from pathlib import Path

import torch

WEIGHT = "torch.nn.Parameter(__import__('torch').full((8, 3, 3, 3), 0.5))"
INPUTS = "((__import__('torch').zeros(1, 3, 8, 8),), {})"


class Payload:
    """Pickles as a call of ``eval``: touches the marker, then evaluates to ``value``."""

    def __init__(self, marker: Path, value: str):
        self.code = f"__import__('pathlib').Path({str(marker)!r}).touch() or {value}"

    def __reduce__(self):
        return (eval, (self.code,))


def _torch_save(obj) -> bytes:
    buffer = io.BytesIO()
    torch.save(obj, buffer)
    return buffer.getvalue()


def rewrite(src: Path, dst: Path, marker: Path, entry: str = "weight") -> None:
    """Copy the archive ``src`` to ``dst`` with ``entry`` (the weight ``stem.weight``, or the
    example inputs) replaced by the payload."""

    def replace(name: str, raw: bytes) -> bytes:
        if entry == "weight" and name == "data/weights/model_weights_config.json":
            config = json.loads(raw)
            config["config"]["stem.weight"]["use_pickle"] = True
            return json.dumps(config).encode()
        if entry == "weight" and name == "data/weights/weight_0":
            return _torch_save(Payload(marker, WEIGHT))
        if entry == "inputs" and name == "data/sample_inputs/model.pt":
            return _torch_save(Payload(marker, INPUTS))
        return raw

    with zipfile.ZipFile(src) as zin, zipfile.ZipFile(dst, "w", zipfile.ZIP_STORED) as zout:
        for info in zin.infolist():
            zout.writestr(info, replace(info.filename.split("/", 1)[1], zin.read(info)))


def main() -> None:
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    from frontends import torch_nets

    out, marker = Path(sys.argv[1]), Path(sys.argv[2])
    good = out.with_name(out.stem + ".good.pt2")
    ep, _ = torch_nets.resnet_program()
    torch.export.save(ep, good)
    rewrite(good, out, marker, sys.argv[3] if len(sys.argv) > 3 else "weight")
    good.unlink()


if __name__ == "__main__":
    main()

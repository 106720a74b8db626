"""Hostile ``.pt2`` archives for the tests: a real exported program saved by
``torch.export.save``, rewritten so one entry is a pickle whose ``__reduce__`` creates a marker
file and then evaluates to a valid value (so a trusted load goes on to compile); or
(``rewrite_program``) so that a string of the graph JSON that torch evaluates as Python — a
symbolic size's ``expr_str``, a ``guards_code`` line, an argument name of the generated
``forward`` — creates the marker and still evaluates to what it replaced.

``python hostile_pt2.py OUT.pt2 MARKER [weight|inputs|expr|guard|name]`` writes one (the e2e
tests use it).
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


def dynamic_program():
    """The ResNet exported with an open batch size: its graph JSON has symbolic sizes."""
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    from frontends import torch_nets

    torch.manual_seed(0)
    batch = torch.export.Dim("batch", min=1, max=8)
    return torch.export.export(torch_nets.ResNet().eval(), (torch.randn(2, 3, 8, 8),), dynamic_shapes={"x": {0: batch}})


def rewrite_program(src: Path, dst: Path, marker: Path, what: str) -> None:
    """Copy the archive ``src`` (of ``dynamic_program``) to ``dst`` with one string of its
    program JSON replaced by a payload that touches ``marker``: ``expr`` the batch size's
    ``expr_str``, ``guard`` a ``guards_code`` line, ``name`` the ``forward`` argument's name."""
    touch = f"__import__('pathlib').Path({str(marker)!r}).touch()"

    def replace(program: dict) -> dict:
        if what == "expr":
            sizes = program["graph_module"]["graph"]["tensor_values"]["x"]["sizes"]
            expr = sizes[0]["as_expr"]
            expr["expr_str"] = f"({expr['expr_str']} if {touch} is None else 0)"
        elif what == "guard":
            program["guards_code"] = [f"{touch} is None"]
        elif what == "name":
            signature = program["graph_module"]["module_call_graph"][0]["signature"]
            signature["forward_arg_names"] = [f"x={touch}"]
        else:
            raise ValueError(what)
        return program

    with zipfile.ZipFile(src) as zin, zipfile.ZipFile(dst, "w", zipfile.ZIP_STORED) as zout:
        for info in zin.infolist():
            raw = zin.read(info)
            if info.filename.endswith("/models/model.json"):
                raw = json.dumps(replace(json.loads(raw))).encode()
            zout.writestr(info, raw)


def main() -> None:
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    from frontends import torch_nets

    out, marker = Path(sys.argv[1]), Path(sys.argv[2])
    kind = sys.argv[3] if len(sys.argv) > 3 else "weight"
    good = out.with_name(out.stem + ".good.pt2")
    if kind in ("expr", "guard", "name"):
        torch.export.save(dynamic_program(), good)
        rewrite_program(good, out, marker, kind)
    else:
        ep, _ = torch_nets.resnet_program()
        torch.export.save(ep, good)
        rewrite(good, out, marker, kind)
    good.unlink()


if __name__ == "__main__":
    main()

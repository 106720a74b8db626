"""The numerics tests' runs of the CLI: an llvm compile (unfused, against a reference), the
``numerics --json`` report and its layers, and the one-message failure of bad input."""

from __future__ import annotations

import json

import pytest

from conftest import run_cli


def compile_llvm(model, out, *options, check=False, timeout=900):
    """``compile MODEL -o OUT --target llvm OPTIONS``: the finished process."""
    return run_cli("compile", model, "-o", out, "--target", "llvm", *options, check=check, timeout=timeout)


def compile_unfused(model, out, reference):
    """``--numerics-unfused`` against ``reference``, which must succeed."""
    return compile_llvm(model, out, "--numerics-unfused", "--reference", reference, check=True)


def unfused_bundle(planted, folder):
    """``planted`` (model, reference) compiled unfused into FOLDER/unfused.bundle: (bundle, stdout)."""
    model, reference = planted
    out = folder / "unfused.bundle"
    return out, compile_unfused(model, out, reference).stdout


def numerics_json(bundle) -> dict:
    return json.loads(run_cli("numerics", bundle, "--json", check=True).stdout)


def layer_entry(data: dict, op: int) -> dict:
    return next(e for e in data["layers"] if e["op_index"] == op)


def planted_divergence(unfused, op: int, opcode: str, name: str) -> dict:
    """The numerics of an ``unfused_bundle`` whose layer ``op`` (``opcode``, ``name``) holds the
    planted change (0.5): checked to be the first divergence, seen unfused and hidden in a
    kernel of the normal build; the numerics document."""
    data = numerics_json(unfused[0])
    assert data["mode"] == "unfused"
    assert data["first_divergence"] == {"subgraph": 0, "op_index": op}
    planted = layer_entry(data, op)
    assert (planted["opcode"], planted["name"]) == (opcode, name)
    assert planted["observed"] and planted["diverges"] and planted["observed_by"] == "unfused"
    assert planted["max_abs"] == pytest.approx(0.5, rel=1e-3)  # the planted change
    # The normal build fuses it with its neighbours: hidden there.
    assert planted["fused"]["observed"] is False and planted["fused"]["hidden_in"]
    assert data["fused_first_divergence"] is not None and data["fused_first_divergence"]["op_index"] > op
    return data


def fails(proc, *fragments):
    """Refused with exit 2, one message without a traceback, naming every fragment."""
    assert proc.returncode == 2, proc.stderr
    assert "Traceback" not in proc.stderr
    for f in fragments:
        assert f in proc.stderr, proc.stderr

"""TVM imported without PyTorch where nothing asked for PyTorch (tvm_explorer/torchless_tvm.py):
the 2–3 s that ``tvm_ffi``'s eager ``import torch`` adds to every compile of a TFLite or ONNX
model, gone; and PyTorch still whole when it is imported first, or afterwards."""

from __future__ import annotations

import json
import subprocess
import sys

PROBE = """
import json, sys
{first}
import tvm_explorer, tvm
loaded_with_tvm = "torch" in sys.modules
import torch
import tvm_ffi._convert as ffi_convert
x = tvm.runtime.tensor(torch.arange(6, dtype=torch.float32).reshape(2, 3).numpy())
print(json.dumps({{
    "loaded_with_tvm": loaded_with_tvm,
    "torch": torch.__version__,
    "sum": float(x.numpy().sum()),
    "ffi_knows_torch": ffi_convert.torch is not None,
}}))
"""


def _probe(first: str = "") -> dict:
    proc = subprocess.run(
        [sys.executable, "-c", PROBE.format(first=first)], capture_output=True, text=True, timeout=300
    )
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout.strip().splitlines()[-1])


def test_tvm_comes_without_torch_and_torch_still_imports_after():
    got = _probe()
    assert not got["loaded_with_tvm"]
    assert got["torch"].startswith("2.") and got["sum"] == 15.0
    assert not got["ffi_knows_torch"]  # tvm_ffi saw no torch: its torch paths are off


def test_torch_imported_first_keeps_tvm_ffis_torch_paths():
    got = _probe("import torch")
    assert got["loaded_with_tvm"] and got["ffi_knows_torch"]

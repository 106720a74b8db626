"""Every model kind's ``FRONTEND`` names its functions by module and name (``base.lazy``):
each one must resolve to a function, and choosing a frontend must import none of them."""

import dataclasses
import importlib
import subprocess
import sys

from tvm_explorer.frontends import FRONTENDS
from tvm_explorer.frontends.base import ReferenceEngine, SubgraphWriter


def _functions(value):
    if isinstance(value, (ReferenceEngine, SubgraphWriter)):
        for field in dataclasses.fields(value):
            yield from _functions(getattr(value, field.name))
    elif callable(value):
        yield value


def test_every_function_of_every_kind_resolves():
    seen = 0
    for frontend in FRONTENDS:
        for field in dataclasses.fields(frontend):
            for fn in _functions(getattr(frontend, field.name)):
                target = getattr(importlib.import_module(fn.__module__), fn.__name__, None)
                assert callable(target), f"{frontend.kind}.{field.name}: {fn.__module__}.{fn.__name__} is not there"
                seen += 1
    assert seen > 30


def test_choosing_a_frontend_imports_no_kind_library():
    code = (
        "import sys; from tvm_explorer.frontends import frontend_for, kind_of;"
        "assert kind_of('m.onnx') == 'onnx' and frontend_for('m.pt2').kind == 'torch';"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('tvm', 'onnx', 'torch', 'tflite', 'onnxruntime')))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120)
    assert out.stdout.strip() == "[]"

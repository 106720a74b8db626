"""``FILE.py:FACTORY``: a ``tvm.relax.frontend.nn`` model named by the Python function that
builds it. Loading it RUNS THAT FILE (it is code, not data): only ``compile`` (and the
``Capture`` API) do, because the user named it on their command line; nothing that only
shows a model (the editor's preview, the language server) ever runs it. FACTORY returns
``(module, spec)``: an ``nn.Module`` and the spec ``export_tvm`` takes
(``{"forward": {"x": nn.spec.Tensor([1, 16], "float32")}}``).
"""

from __future__ import annotations

import importlib.util
import os
import re
import sys
from typing import Any

from tvm_explorer.errors import ModelError

_SPEC = re.compile(r"^(?P<file>.+\.py):(?P<factory>[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*)$")


def split_factory(text: str) -> tuple[str, str] | None:
    """``("models/net.py", "make")`` for ``models/net.py:make``; None for anything else."""
    found = _SPEC.match(os.fspath(text))
    return (found["file"], found["factory"]) if found else None


def run_factory(text: str):
    """Import FILE.py (as a module of its own, its folder first on ``sys.path`` while it
    loads) and call FACTORY; ``(module, spec)`` or ModelError naming the file."""
    parts = split_factory(text)
    if parts is None:
        raise ModelError(f"{text}: expected FILE.py:FACTORY (a function returning an nn.Module and its spec)")
    path, factory = parts
    if not os.path.isfile(path):
        raise ModelError(f"{path}: no such file")
    from tvm.relax.frontend import nn

    folder = os.path.dirname(os.path.abspath(path))
    name = "tvmx_nn_model_" + re.sub(r"\W", "_", os.path.splitext(os.path.basename(path))[0])
    added = folder not in sys.path
    if added:
        sys.path.insert(0, folder)
    try:
        spec = importlib.util.spec_from_file_location(name, path)
        if spec is None or spec.loader is None:
            raise ModelError(f"{path}: cannot be loaded as a Python module")
        code = importlib.util.module_from_spec(spec)
        try:
            spec.loader.exec_module(code)
            target: Any = code  # then the factory, looked up by name
            for part in factory.split("."):
                target = getattr(target, part)
            made = target()
        except ModelError:
            raise
        except Exception as err:  # noqa: BLE001 - the user's code failed: say where
            raise ModelError(
                f"{text}: running it failed: {type(err).__name__}: {' '.join(str(err).split())[:300]}"
            ) from None
    finally:
        if added and folder in sys.path:
            sys.path.remove(folder)
    if not (isinstance(made, tuple) and len(made) == 2 and isinstance(made[0], nn.Module)):
        raise ModelError(f"{text}: {factory}() must return (nn.Module, spec), not {type(made).__name__}")
    return made


def refuse_preview(path):
    """A Python model is never run to be shown (see above): ModelError saying how to see it."""
    raise ModelError(
        f"{path}: a Python model is code; it is shown only after you compile it "
        "(tvm-explorer compile FILE.py:FACTORY -o BUNDLE)"
    )


def no_reference(path, _inputs=None):
    """``--numerics`` has no framework of its own to compare an nn module with."""
    from tvm_explorer.errors import ExplorerError

    raise ExplorerError(
        f"{path}: --numerics compares with the model's own framework; a tvm.relax.frontend.nn "
        "module has none besides TVM (use --profile, or compile the PyTorch original as a .pt2)"
    )

"""``--pipeline MODULE:FUNCTION``: a Relax pipeline of the user's own making.

``FUNCTION(target)`` (``target`` a ``tvm.target.Target``) returns the Relax pipeline, a
``tvm.transform.Pass`` — usually a ``tvm.transform.Sequential``, or a ``module_pass``
function that runs one. ``MODULE`` is imported from the current directory or PYTHONPATH.
Every way this can go wrong ends in one ``ExplorerError`` naming the spec.
"""

from __future__ import annotations

import importlib
import os
import sys

import tvm

from ..errors import ExplorerError


def _brief(err: BaseException) -> str:
    text = " ".join(str(err).split())[:300]
    return f"{type(err).__name__}: {text}" if text else type(err).__name__


def load_pipeline_function(spec: str):
    """The function named by ``MODULE:FUNCTION`` (imported, checked to be callable)."""
    module_name, sep, func_name = spec.partition(":")
    if not sep or not module_name or not func_name:
        raise ExplorerError(f"--pipeline {spec!r}: expected MODULE:FUNCTION "
                            "(e.g. my_pipelines:fused_cpu)")
    if os.getcwd() not in sys.path and "" not in sys.path:
        sys.path.insert(0, os.getcwd())  # "from the current directory", as `python -m` would
    try:
        module = importlib.import_module(module_name)
    except BaseException as err:  # noqa: BLE001 - a user's module may raise anything on import
        if isinstance(err, KeyboardInterrupt):
            raise
        raise ExplorerError(f"--pipeline {spec}: cannot import module '{module_name}' from the "
                            f"current directory or PYTHONPATH ({_brief(err)})") from None
    func = module
    for part in func_name.split("."):
        func = getattr(func, part, None)
        if func is None:
            raise ExplorerError(f"--pipeline {spec}: module '{module_name}' "
                                f"({getattr(module, '__file__', '?')}) has no '{func_name}'")
    if not callable(func):
        raise ExplorerError(f"--pipeline {spec}: '{func_name}' is a {type(func).__name__}, "
                            "not a function of the target")
    return func


def make_pipeline(spec: str, target: tvm.target.Target) -> tvm.transform.Pass:
    """Call the user's function with the target; the pass it returns."""
    func = load_pipeline_function(spec)
    try:
        result = func(target)
    except BaseException as err:  # noqa: BLE001
        if isinstance(err, KeyboardInterrupt):
            raise
        raise ExplorerError(f"--pipeline {spec}: {spec.partition(':')[2]}(target) raised "
                            f"{_brief(err)}") from None
    if not isinstance(result, tvm.transform.Pass):
        raise ExplorerError(f"--pipeline {spec}: {spec.partition(':')[2]}(target) returned "
                            f"{type(result).__name__}, not a tvm.transform.Pass (the Relax pipeline)")
    return result

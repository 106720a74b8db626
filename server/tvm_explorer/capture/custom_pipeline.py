"""``--pipeline MODULE:FUNCTION`` or ``FILE.py:FUNCTION``: a Relax pipeline of the user's own.

``FUNCTION(target)`` (``target`` a ``tvm.target.Target``) returns the Relax pipeline, a
``tvm.transform.Pass`` — usually a ``tvm.transform.Sequential``, or a ``module_pass``
function that runs one. ``MODULE`` is imported from the current directory or PYTHONPATH; a
``FILE.py`` is loaded from that path (its folder is searched last for the modules it imports),
so a tool running the CLI from elsewhere (the VS Code extension) can name the file.
Every way this can go wrong ends in one ``ExplorerError`` naming the spec.
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import sys

import tvm

from tvm_explorer.errors import ExplorerError


def _brief(err: BaseException) -> str:
    text = " ".join(str(err).split())[:300]
    return f"{type(err).__name__}: {text}" if text else type(err).__name__


def load_pipeline_function(spec: str):
    """The function named by ``MODULE:FUNCTION`` or ``FILE.py:FUNCTION`` (imported, checked
    to be callable)."""
    module_name, sep, func_name = spec.rpartition(":")
    if not sep or not module_name or not func_name:
        raise ExplorerError(
            f"--pipeline {spec!r}: expected MODULE:FUNCTION or FILE.py:FUNCTION (e.g. my_pipelines:fused_cpu)"
        )
    try:
        module = _load_file(module_name) if module_name.endswith(".py") else _import(module_name)
    except ExplorerError as err:
        raise ExplorerError(f"--pipeline {spec}: {err}") from None
    except BaseException as err:  # noqa: BLE001 - a user's module may raise anything on import
        if isinstance(err, KeyboardInterrupt):
            raise
        where = "" if module_name.endswith(".py") else " from the current directory or PYTHONPATH"
        raise ExplorerError(f"--pipeline {spec}: cannot import module '{module_name}'{where} ({_brief(err)})") from None
    func = module
    for part in func_name.split("."):
        func = getattr(func, part, None)
        if func is None:
            raise ExplorerError(
                f"--pipeline {spec}: module '{module_name}' ({getattr(module, '__file__', '?')}) has no '{func_name}'"
            )
    if not callable(func):
        raise ExplorerError(
            f"--pipeline {spec}: '{func_name}' is a {type(func).__name__}, not a function of the target"
        )
    return func


def _import(name: str):
    if os.getcwd() not in sys.path and "" not in sys.path:
        sys.path.insert(0, os.getcwd())  # "from the current directory", as `python -m` would
    return importlib.import_module(name)


def _load_file(path: str):
    """A pipeline module loaded from its file; its folder is appended to the search path (its
    own helper modules import, installed packages are not shadowed)."""
    full = os.path.abspath(path)
    if not os.path.isfile(full):
        raise ExplorerError(f"no such file {full}")
    folder = os.path.dirname(full)
    if folder not in sys.path:
        sys.path.append(folder)
    name = os.path.splitext(os.path.basename(full))[0]
    if name.isidentifier() and name not in sys.modules:
        # Registered under its own name, as an import would: its classes pickle and its
        # dataclasses find their module.
        module_spec = importlib.util.spec_from_file_location(name, full)
        assert module_spec is not None and module_spec.loader is not None  # a .py file (load_pipeline_function)
        module = importlib.util.module_from_spec(module_spec)
        sys.modules[name] = module
        try:
            module_spec.loader.exec_module(module)
        except BaseException:
            del sys.modules[name]
            raise
        return module
    existing = sys.modules.get(name)
    if existing is not None and os.path.abspath(getattr(existing, "__file__", "") or "") == full:
        return existing
    raise ExplorerError(
        f"{full}: its name '{name}' is not a module name, or another module of "
        "that name is already loaded; rename the file"
    )


def make_pipeline(spec: str, target: tvm.target.Target) -> tvm.transform.Pass:
    """Call the user's function with the target; the pass it returns."""
    func = load_pipeline_function(spec)
    try:
        result = func(target)
    except BaseException as err:  # noqa: BLE001
        if isinstance(err, KeyboardInterrupt):
            raise
        raise ExplorerError(f"--pipeline {spec}: {spec.partition(':')[2]}(target) raised {_brief(err)}") from None
    if not isinstance(result, tvm.transform.Pass):
        raise ExplorerError(
            f"--pipeline {spec}: {spec.partition(':')[2]}(target) returned "
            f"{type(result).__name__}, not a tvm.transform.Pass (the Relax pipeline)"
        )
    return result

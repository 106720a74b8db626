"""``tvm-explorer profile BUNDLE``: the CompileJob that rebuilds a bundle, from its manifest
and the ProfileJob of the command line (same target and options; the model's SHA-256
checked).

A bundle is data someone may have handed over: nothing read from it is imported or run. A
Relax pipeline (Python code) is used only when named on the command line (``--pipeline``);
a manifest that records one is refused without it, saying what it asked for. A model the
manifest names as ``FILE.py:FACTORY`` (code too) is refused the same way (``--model``)."""

from __future__ import annotations

import hashlib
import os
import re

from tvm_explorer.app.jobs import CompileJob, ProfileJob
from tvm_explorer.errors import ExplorerError
from tvm_explorer.frontends import is_python_model

_SPEC = re.compile(r"(?:[A-Za-z_][\w.]*|[\w./-]+\.py):[A-Za-z_][\w.]*\Z", re.ASCII)


def _sha256(path: str) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def rebuild_job(job: ProfileJob) -> CompileJob:
    """The CompileJob that rebuilds ``job.bundle`` and measures it, or ExplorerError."""
    from pathlib import Path

    from tvm_explorer.bundle.manifest import read_manifest

    root = Path(job.bundle)
    if not root.is_dir():
        raise ExplorerError(f"{job.bundle}: not a bundle directory")
    manifest = read_manifest(root.resolve())  # the manifest alone: nothing else is loaded
    model_entry = manifest.get("model") or {}
    options = manifest.get("options") or {}
    recorded = options.get("pipeline")
    if recorded and not job.pipeline:
        text = str(recorded)[:200]
        # the manifest's text is shown escaped; offered as the flag only if it is one
        allow = f"--pipeline {text}" if _SPEC.match(text) else "--pipeline MODULE:FUNCTION"
        raise ExplorerError(
            f"{job.bundle}: its manifest says it was compiled with the Relax pipeline {text!r}, Python "
            "code that profile would import and run; nothing read from a bundle is imported or run. "
            f"If you trust that code, name it yourself: {allow} (imported from the current "
            "directory or PYTHONPATH, as compile does)"
        )
    model = job.model or model_entry.get("path")
    if not model:
        raise ExplorerError(
            f"{job.bundle}: its manifest does not record where the model is (written by an older "
            "tvm-explorer): name it with --model PATH"
        )
    if job.model and not os.path.isfile(model):
        raise ExplorerError(f"{model}: no such model file (--model)")
    if not os.path.isfile(model):
        raise ExplorerError(
            f"{model}: the model {job.bundle} was compiled from is not there any more: name it with --model PATH"
        )
    if not job.model and is_python_model(str(model)):
        raise ExplorerError(
            f"{job.bundle}: its manifest names the model {str(model)[:200]!r}, Python code (FILE.py:FACTORY) "
            "that profile would import and run; nothing read from a bundle is run: name the model "
            "yourself with --model"
        )
    if model_entry.get("sha256") and _sha256(model) != model_entry["sha256"]:
        raise ExplorerError(
            f"{model}: not the model {job.bundle} was compiled from (its SHA-256 differs): give that "
            "model with --model, or compile this one anew (tvm-explorer compile)"
        )
    return CompileJob(
        model=model,
        output=job.bundle,
        target=job.target or manifest.get("target") or "c",
        limits=job.limits,
        exact_origins=bool(options.get("exact_origins")),
        schedule_records=bool(options.get("schedule_records", True)),
        progress=job.progress,
        pipeline=job.pipeline,
        input_shapes=_input_shapes(options.get("input_shapes")),
        sass=options.get("sass") if isinstance(options.get("sass"), str) else None,
        trust_pickle=job.trust_pickle,
        measure=job.measure,
    )


def _input_shapes(recorded) -> tuple:
    """The bundle's ``--input-shape`` pins, to compile it again the same way."""
    from tvm_explorer.frontends.input_shapes import InputShape

    if not isinstance(recorded, dict):
        return ()
    return tuple(
        InputShape(str(name), tuple(int(d) for d in dims))
        for name, dims in recorded.items()
        if isinstance(dims, list) and all(isinstance(d, int) for d in dims)
    )

"""A bundle's ``manifest.json``, read and checked once, the same way by every reader (the
language server's load, ``profile``, the CLI): the format and schema version, a finished
compile, its documents and passes lists, the model and tool entries. ``peek_manifest`` is the
one quick look at whether a folder's ``manifest.json`` is ours at all (the workspace search
for bundles, ``compile -o``'s check of what it may replace). Nothing else parses the file."""

from __future__ import annotations

from pathlib import Path

from tvm_explorer.bundle.files import Budget, parse_json, read_json, read_regular
from tvm_explorer.bundle.format import FORMAT_NAME, MANIFEST, SCHEMA_VERSION, STAGES
from tvm_explorer.errors import BundleError


def read_manifest(root: Path, budget: Budget | None = None) -> dict:
    """The checked manifest of the bundle directory ``root`` (charged to ``budget`` when
    given), or BundleError naming the file."""
    path = root / MANIFEST
    manifest = read_json(root, MANIFEST, "manifest", budget)
    if not isinstance(manifest, dict) or manifest.get("format") != FORMAT_NAME:
        raise BundleError(f"{path}: not a tvm-explorer bundle manifest")
    if manifest.get("schema_version") != SCHEMA_VERSION:
        raise BundleError(
            f"{path}: schema version {manifest.get('schema_version')!r} is not supported "
            f"(this tvm-explorer reads version {SCHEMA_VERSION}); recompile the bundle"
        )
    if manifest.get("complete") is not True:
        raise BundleError(f"{path}: bundle is incomplete (its compile did not finish)")
    for key in ("documents", "passes"):
        if not isinstance(manifest.get(key), list):
            raise BundleError(f"{path}: '{key}' must be a list")
    for i, entry in enumerate(manifest["passes"]):
        if not (
            isinstance(entry, dict)
            and isinstance(entry.get("index"), int)
            and isinstance(entry.get("name"), str)
            and entry.get("stage") in STAGES
        ):
            raise BundleError(f"{path}: pass entry {i} is malformed")
        for key in ("units", "attributed", "tir_units", "tir_attributed"):
            if key in entry and not isinstance(entry[key], int):
                raise BundleError(f"{path}: pass entry {i} has a non-integer '{key}'")
    _check_model_and_tool(path, manifest)
    return manifest


def _check_model_and_tool(path: Path, manifest: dict) -> None:
    """``model`` and ``tool`` are objects (their fields are read with ``.get``); the model's
    ``file``, ``sha256`` and ``kind`` are strings."""
    for key in ("model", "tool"):
        if key in manifest and not isinstance(manifest[key], dict):
            raise BundleError(f"{path}: '{key}' must be an object, not {type(manifest[key]).__name__}")
    for key in ("file", "sha256", "kind"):
        value = manifest.get("model", {}).get(key)
        if value is not None and not isinstance(value, str):
            raise BundleError(f"{path}: 'model.{key}' must be a string, not {type(value).__name__}")


MAX_PEEKED_MANIFEST = 16 * 1024**2
"""Bytes of a ``manifest.json`` ``peek_manifest`` reads at most (a bundle's is kilobytes)."""


def peek_manifest(root: Path, limit: int = MAX_PEEKED_MANIFEST) -> dict | None:
    """The parsed ``manifest.json`` of the directory ``root`` when it is a tvm-explorer
    bundle's (its format marker; nothing else checked), None when it is readable JSON of
    something else (a web app's, an extension's…). BundleError when it cannot be read: missing,
    not a regular file, a symlink out of ``root``, over ``limit`` bytes, not JSON."""
    path = root / MANIFEST
    try:
        data = read_regular(
            path,
            "manifest",
            root.resolve(),
            limit=limit,
            too_large=lambda size: BundleError(f"{path}: manifest is too large"),
        )
    except OSError as err:
        raise BundleError(f"{path}: {err.strerror or type(err).__name__}") from None
    manifest = parse_json(data, path, "manifest")
    return manifest if isinstance(manifest, dict) and manifest.get("format") == FORMAT_NAME else None

"""Compiled test bundles kept between test runs, keyed by what a compile's output depends on.

The pytest session (tests/conftest.py's ``BundleCache``) and the editor tests
(tests/e2e/lib/bundle.mjs, which computes the same key) share one store:
``test-artifacts/bundle-cache/<key>.bundle``. The key hashes the model's bytes and where it
lies (a bundle's manifest names the model's path), the target and options, the interpreter,
every ``.py`` file of ``server/tvm_explorer`` and ``pyproject.toml`` (the pinned TVM and its
neighbours): any change of code or pins compiles afresh. A bundle enters
the store whole (compiled aside, then renamed in), so a run stopped half way leaves no bundle
that looks good; a run that wants a key another run (a parallel pytest worker, the editor tests)
is compiling waits for it instead of compiling it again. Bundles unused for a week are removed
when a new one is stored.

``python -m tests.bundle_store MODEL TARGET [OPTION...]`` prints the stored bundle of that
compile, compiling it first if need be: how the editor tests (tests/e2e/lib/bundle.mjs) use the
store, so that there is one key and one lock.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import shutil
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from tests.cli_runner import run_cli

REPO = Path(__file__).resolve().parents[1]
PACKAGE = REPO / "server" / "tvm_explorer"


def store_dir() -> Path:
    """Where the store lies (next to tests/e2e's screenshots, under the ignored artifacts)."""
    artifacts = Path(os.environ.get("TVM_EXPLORER_ARTIFACTS") or REPO / "test-artifacts")
    return artifacts / "bundle-cache"


def code_files() -> list[tuple[str, Path]]:
    """The files a compile's output can depend on, as (path relative to the repo, path), in
    code-point order of the relative path (the order tests/e2e/lib/bundle.mjs uses)."""
    found = [p for p in PACKAGE.rglob("*.py") if "__pycache__" not in p.parts]
    found.append(REPO / "pyproject.toml")
    return sorted(((p.relative_to(REPO).as_posix(), p) for p in found), key=lambda item: item[0])


def compile_key(model: Path, target: str, extra: tuple[str, ...], python: str = sys.executable) -> str:
    """The store key of ``tvm-explorer compile MODEL --target TARGET EXTRA...`` run by ``python``."""
    digest = hashlib.sha256()
    digest.update(Path(model).read_bytes())
    digest.update(os.path.realpath(model).encode())
    options = json.dumps([target, [str(e) for e in extra]], separators=(",", ":"), ensure_ascii=False)
    digest.update(options.encode())
    digest.update(os.path.realpath(python).encode())
    for rel, path in code_files():
        digest.update(rel.encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()[:16]


KEEP_DAYS = 7


def prune(root: Path, keep_days: float = KEEP_DAYS) -> None:
    """Removes stored bundles (and leftovers of stopped runs) unused for ``keep_days``: every
    change of the package makes new keys, and a CUDA bundle of mobilenet is 60 MB."""
    cutoff = time.time() - keep_days * 86400
    for entry in root.iterdir():
        try:
            old = entry.stat().st_mtime < cutoff
        except FileNotFoundError:
            continue
        if not old or entry.is_symlink():
            continue
        if entry.is_dir():
            shutil.rmtree(entry, ignore_errors=True)
        elif entry.suffix == ".lock":
            entry.unlink(missing_ok=True)


@contextmanager
def _building(root: Path, key: str) -> Iterator[None]:
    """Held while ``key`` is compiled: another process asking for it waits, then finds it."""
    with open(root / f"{key}.lock", "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes, or the process dies
        yield


def stored(key: str, build: Callable[[Path], None], root: Path | None = None) -> Path:
    """The stored bundle of ``key``; ``build(out)`` compiles it into ``out`` first if it is not
    there. Callers copy it: a stored bundle is never changed in place."""
    root = root or store_dir()
    root.mkdir(parents=True, exist_ok=True)
    path = root / f"{key}.bundle"
    if (path / "manifest.json").exists():
        os.utime(path)  # used: kept by prune()
        return path
    with _building(root, key):
        if (path / "manifest.json").exists():  # compiled by whoever held the lock before
            os.utime(path)
            return path
        prune(root)
        tmp = root / f"{key}.tmp-{os.getpid()}"
        shutil.rmtree(tmp, ignore_errors=True)
        try:
            build(tmp)
        except BaseException:
            shutil.rmtree(tmp, ignore_errors=True)
            raise
        shutil.rmtree(path, ignore_errors=True)  # a half-written one (no manifest) from a stopped run
        os.rename(tmp, path)
    return path


def compiled(model: Path, target: str, extra: tuple[str, ...]) -> Path:
    """The stored bundle of ``tvm-explorer compile MODEL --target TARGET EXTRA...``."""

    def build(to: Path) -> None:
        run_cli("compile", model, "-o", to, "--target", target, *extra, check=True)

    return stored(compile_key(model, target, extra), build)


def built_model(name: str, data: bytes) -> Path:
    """A model a test builds, at a fixed place beside the store (its path is part of a bundle's
    key): written when missing or different, whole (renamed in), so that later runs find the
    bundles compiled from it."""
    path = store_dir().parent / "models" / name
    if path.exists() and path.read_bytes() == data:
        return path
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f"{name}.tmp-{os.getpid()}")
    tmp.write_bytes(data)
    os.replace(tmp, path)
    return path


if __name__ == "__main__":
    model, target, *options = sys.argv[1:]
    print(compiled(Path(model), target, tuple(options)))

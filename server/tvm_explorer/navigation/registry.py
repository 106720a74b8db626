"""Which bundles exist, which one a file belongs to, and which ones changed on disk.

Protocol-free: the language server asks this registry, it never walks the disk itself.
Bundles are replaced atomically by ``tvm-explorer compile`` (a directory rename), so a bundle
is identified by the inode of its directory and of its manifest: any recompile changes them.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from pathlib import Path

from tvm_explorer.bundle.format import MANIFEST
from tvm_explorer.bundle.manifest import peek_manifest
from tvm_explorer.bundle.reader import Bundle
from tvm_explorer.errors import BundleError
from tvm_explorer.navigation.view import BundleView, DocumentParts

SKIP_DIRS = {"node_modules", "__pycache__", ".git", ".venv", "venv", ".tox", "site-packages"}
MAX_DEPTH = 6
MAX_DIRS = 20000
ANCESTOR_LEVELS = 4

Signature = tuple


MAX_SIGNATURE_FILES = 20000
SETTLE_SECONDS = 0.3
"""How long a changed bundle must stay unchanged before it is (re)loaded."""


def signature(root: Path) -> Signature | None:
    """What identifies the bundle currently at ``root`` (None: no manifest there): the
    directory and every file in it (inode, size, modification time), so that copying a new
    bundle over an old one file by file is seen, whatever order the files come in (only the
    manifest used to be watched, and a bundle whose JSON files were copied first stayed
    damaged). Hidden entries (temporary directories of compiles) are left out."""
    try:
        dir_stat = os.stat(root)
        man = os.stat(root / MANIFEST)
    except OSError:
        return None
    files = []
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if not d.startswith("."))
        for name in sorted(filenames):
            if name.startswith("."):
                continue
            try:
                info = os.lstat(os.path.join(dirpath, name))
            except OSError:
                continue  # vanished while walking: the next look sees the difference
            files.append((dirpath, name, info.st_ino, info.st_size, info.st_mtime_ns))
            if len(files) >= MAX_SIGNATURE_FILES:
                break
        if len(files) >= MAX_SIGNATURE_FILES:
            break
    return (dir_stat.st_dev, dir_stat.st_ino, man.st_ino, man.st_mtime_ns, man.st_size, tuple(files))


def may_be_bundle(manifest: Path) -> bool:
    """Whether a ``manifest.json`` may be a bundle's: False only for a readable JSON file that
    is not a tvm-explorer bundle manifest (a web app's, an extension's...), which is skipped
    quietly. An unreadable one (damaged, a FIFO, a symlink out) counts, so that its bundle is
    reported as damaged by the loader."""
    try:
        return peek_manifest(manifest.parent) is not None
    except BundleError:
        return True


def discover(folders: list[Path]) -> list[Path]:
    """Bundle directories (holding a bundle's manifest.json) under the workspace folders.
    Hidden directories (in-progress ``.X.tmp-<pid>`` compiles) and symlinks are not entered;
    a directory whose manifest.json is not a bundle's is searched further down."""
    found: list[Path] = []
    visited = 0
    for folder in folders:
        base_depth = len(folder.parts)
        for dirpath, dirnames, filenames in os.walk(folder):
            visited += 1
            here = Path(dirpath)
            if MANIFEST in filenames and may_be_bundle(here / MANIFEST):
                found.append(here.resolve())
                dirnames[:] = []
                continue
            if len(here.parts) - base_depth >= MAX_DEPTH or visited > MAX_DIRS:
                dirnames[:] = []
                continue
            dirnames[:] = sorted(d for d in dirnames if not d.startswith(".") and d not in SKIP_DIRS)
    return sorted(set(found))


def size_hint(root: Path, max_files: int = 5000) -> int:
    """Bytes of the files in a bundle directory (a cheap measure of how long it takes to load;
    symlinks and hidden entries are not followed)."""
    total, files = 0, 0
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = [d for d in dirnames if not d.startswith(".")]
        for name in filenames:
            files += 1
            if files > max_files:
                return total
            try:
                info = os.lstat(os.path.join(dirpath, name))
            except OSError:
                continue
            total += info.st_size
    return total


def enclosing_root(path: Path) -> Path | None:
    """The bundle directory holding ``path`` (a few levels up at most), or None."""
    for parent in list(path.parents)[:ANCESTOR_LEVELS]:
        if (parent / MANIFEST).is_file() and may_be_bundle(parent / MANIFEST):
            return parent
    return None


def load(root: Path, on_document: Callable[[int, int, str], None] | None = None) -> BundleView:
    """Load and fully read the bundle at ``root``. Raises BundleError if it is unusable.

    Retries when the bundle is replaced while being read, so the result never mixes two
    compiles; ``view.signature`` is the signature of the version read (not of the one there
    when the load began), which is what the registry must remember for it."""
    for _ in range(5):
        before = signature(root)
        if before is None:
            raise BundleError(f"{root}: no {MANIFEST} (not a bundle, or being replaced)")
        try:
            bundle = Bundle(root, prepare=DocumentParts.prepare)  # the layer map's parts
            problems = bundle.preload(on_document)
        except BundleError:
            # Half old, half new (a recompile swapped the directory while it was read):
            # read again; only an error of a bundle that stays put is the bundle's fault.
            if signature(root) != before:
                continue
            raise
        if signature(root) == before:
            view = BundleView(bundle, problems)
            view.signature = before
            return view
    raise BundleError(f"{root}: bundle keeps changing while being read")


class Registry:
    """The loaded bundles by root. Every change replaces the whole mapping, so a reader
    holding ``registry.bundles`` sees one consistent state."""

    def __init__(self):
        self.bundles: dict[Path, BundleView] = {}
        self.signatures: dict[Path, Signature | None] = {}
        self.failures: dict[Path, str] = {}
        # What each changed root looked like at the previous look: a root is reloaded only
        # once it looks the same twice in a row (a copy in progress is not loaded half-done).
        self._last_seen: dict[Path, tuple[Signature | None, float]] = {}

    def find(self, path: Path) -> tuple[BundleView, str] | None:
        """The loaded bundle containing file ``path`` and the path's bundle-relative form,
        if it is one of that bundle's documents."""
        bundles = self.bundles
        for parent in list(path.parents)[:ANCESTOR_LEVELS]:
            view = bundles.get(parent)
            if view is not None:
                rel = path.relative_to(parent).as_posix()
                return (view, rel) if view.bundle.document(rel) else None
        return None

    def is_current(self, view: BundleView) -> bool:
        """Whether ``view`` is still the bundle installed at its root (background work for
        a bundle replaced or forgotten meanwhile stops)."""
        return self.bundles.get(view.root) is view

    def install(self, root: Path, view: BundleView | None, sig: Signature | None, error: str | None = None) -> None:
        """Record the outcome of (re)loading ``root``: a bundle, or the error that kept it out."""
        bundles = dict(self.bundles)
        if view is None:
            bundles.pop(root, None)
        else:
            bundles[root] = view
        failures = dict(self.failures)
        if error is None:
            failures.pop(root, None)
        else:
            failures[root] = error
        self.signatures = {**self.signatures, root: sig}
        self.failures = failures
        self.bundles = bundles

    def forget(self, root: Path) -> None:
        """Drop everything known about ``root`` (it disappeared)."""
        self.bundles = {r: v for r, v in self.bundles.items() if r != root}
        self.signatures = {r: s for r, s in self.signatures.items() if r != root}
        self.failures = {r: e for r, e in self.failures.items() if r != root}

    def changed(self, skip=()) -> list[Path]:
        """Known roots whose bundle on disk differs from the one last loaded (or tried) and
        has settled: it looked the same at the previous call (calls are a poll interval apart,
        so files still being written are waited for). A bundle that disappeared is reported
        at once. Roots in ``skip`` (being loaded now) are not looked at."""
        out = []
        for root, sig in self.signatures.items():
            if root in skip:
                continue
            now = signature(root)
            if now == sig:
                self._last_seen.pop(root, None)
            elif now is None or self._stable(root, now):
                out.append(root)
        return out

    def _stable(self, root: Path, now: Signature) -> bool:
        seen = self._last_seen.get(root)
        t = time.monotonic()
        if seen is None or seen[0] != now:
            self._last_seen[root] = (now, t)
            return False
        if t - seen[1] < SETTLE_SECONDS:
            return False
        del self._last_seen[root]
        return True

    def settled(self, roots) -> list[Path]:
        """Of newly found ``roots``, those that looked the same at the previous call (a bundle
        being copied into the workspace is loaded once the copy is done)."""
        return [root for root in roots if (now := signature(root)) is not None and self._stable(root, now)]

"""Which files of an output directory the tool wrote, and may therefore replace.

``compile -o DEST`` replaces DEST as a whole (one atomic swap), so it must first know that
DEST is its own: a directory that does not exist yet, an empty one, or a bundle this tool
wrote (a ``manifest.json`` with our format marker). Its files are the ones that manifest lists
(plus the manifest and the index). Anything else in a bundle (``.vscode/``, notes, the model
the bundle was compiled from) is *foreign*: it is carried into the new bundle by hard link and
never deleted. A directory that is not a bundle is refused, naming what is in it.
"""

from __future__ import annotations

import os
import shutil
import stat
from dataclasses import dataclass, field
from pathlib import Path

from tvm_explorer.bundle.files import MAX_FILE_BYTES
from tvm_explorer.bundle.format import INDEX, MANIFEST
from tvm_explorer.bundle.manifest import peek_manifest
from tvm_explorer.errors import ExplorerError

_SHOWN = 5  # entries named in a refusal


@dataclass
class OutputDir:
    """What is at an output path: ``owned`` files (relative paths) the tool wrote, and the
    ``foreign`` entries (files, symlinks or whole directories) it did not."""

    path: Path
    exists: bool
    owned: frozenset[str] = frozenset()
    foreign: tuple[str, ...] = ()
    carried: dict[str, tuple[int, int]] = field(default_factory=dict)


def _listing(root: Path) -> str:
    names = sorted(p.name + ("/" if p.is_dir() and not p.is_symlink() else "") for p in root.iterdir())
    shown = ", ".join(names[:_SHOWN])
    return shown + (f" and {len(names) - _SHOWN} more" if len(names) > _SHOWN else "")


def _named(dest: Path) -> str:
    shown = str(dest)
    return shown if dest.is_absolute() and ".." not in dest.parts else f"{shown} ({dest.absolute()})"


def _refuse(dest: Path, why: str, rule: bool = True) -> ExplorerError:
    tail = (
        (
            "; refusing to write there (compile -o replaces only a bundle that tvm-explorer "
            "wrote, or an empty or new directory)"
        )
        if rule
        else ""
    )
    return ExplorerError(f"{_named(dest)}: {why}{tail}")


def _bundle_files(dest: Path) -> frozenset[str] | None:
    """The files a bundle manifest at ``dest`` says the tool wrote; None if there is no
    manifest of ours there."""
    path = dest / MANIFEST

    try:
        if not stat.S_ISREG(path.lstat().st_mode):
            return None
        # Checked on the open file: swapped for a symlink or a FIFO meanwhile, it is refused.
        manifest = peek_manifest(dest, MAX_FILE_BYTES)
    except (OSError, ExplorerError):
        return None
    if manifest is None or not isinstance(manifest.get("documents"), list):
        return None
    files = {MANIFEST, INDEX}
    for entry in manifest["documents"] + list(manifest.get("traces") or []):
        if isinstance(entry, dict) and isinstance(entry.get("path"), str):
            files.add(entry["path"])
    extra = manifest.get("files")
    files.update(f for f in (extra if isinstance(extra, list) else ()) if isinstance(f, str))
    return frozenset(files)


def _foreign_entries(root: Path, owned: frozenset[str]) -> list[str]:
    """Entries under ``root`` the tool did not write: a directory holding no owned file
    counts as one entry (carried whole)."""
    owned_dirs = {"/".join(p.split("/")[:i]) for p in owned for i in range(1, p.count("/") + 1)}
    foreign: list[str] = []

    def walk(directory: Path, prefix: str) -> None:
        for entry in sorted(os.scandir(directory), key=lambda e: e.name):
            rel = prefix + entry.name
            if entry.is_dir(follow_symlinks=False) and rel in owned_dirs:
                walk(Path(entry.path), rel + "/")
            elif rel not in owned or not entry.is_file(follow_symlinks=False):
                foreign.append(rel)

    walk(root, "")
    return foreign


def _contains_cwd(dest: Path) -> bool:
    try:
        cwd = Path.cwd().resolve()
    except OSError:
        return False
    resolved = dest.resolve()
    return cwd == resolved or resolved in cwd.parents


def _identity(dest: Path):
    """What changes when the directory or its manifest is replaced (a concurrent swap)."""
    try:
        d, m = dest.lstat(), (dest / MANIFEST).lstat()
        return d.st_ino, m.st_ino, m.st_mtime_ns
    except OSError:
        return None


def inspect_output(dest: str | os.PathLike, inputs=()) -> OutputDir:
    """Decide whether ``dest`` may be (re)placed by a new bundle; raise ExplorerError with
    one message naming what is there if not. ``inputs`` (the model) must survive: one that
    is a file of the bundle being replaced is refused."""
    dest = Path(dest)
    for _ in range(5):
        # Another program may swap the bundle while it is read (a bundle replaced by a copy
        # or a concurrent compile): the listing must come from the manifest it was read with.
        before = _identity(dest)
        try:
            result = _inspect(dest, inputs)
        except ExplorerError:
            if before is not None and before == _identity(dest):
                raise
            continue
        if before == _identity(dest):
            return result
    return _inspect(dest, inputs)


def _inspect(dest: Path, inputs) -> OutputDir:
    if dest.is_symlink():
        raise _refuse(dest, "output path is a symbolic link")
    if not dest.exists():
        return OutputDir(dest, False)
    if not dest.is_dir():
        raise ExplorerError(f"{dest}: output path exists and is not a directory")
    try:
        empty = not any(dest.iterdir())
        owned = frozenset() if empty else _bundle_files(dest)
        if owned is None:
            manifest = dest / MANIFEST
            what = (
                f"its {MANIFEST} is not a tvm-explorer bundle manifest"
                if manifest.exists() or manifest.is_symlink()
                else "it is not a bundle"
            )
            raise _refuse(dest, f"output directory is not empty and {what} (it holds {_listing(dest)})")
        if _contains_cwd(dest):
            raise _refuse(
                dest,
                "output directory is the current directory (or contains it); "
                "the new bundle replaces it as a whole, which would leave you in "
                "a deleted directory: run the compile from outside it",
                rule=False,
            )
        foreign = _foreign_entries(dest, owned)
    except OSError as err:
        raise ExplorerError(f"{dest}: cannot read the output directory ({err.strerror})") from None
    root = dest.resolve()
    for item in inputs:
        try:
            resolved = Path(item).resolve()
        except OSError:
            continue
        if root in resolved.parents and resolved.relative_to(root).as_posix() in owned:
            raise _refuse(dest, f"{item} is a file of the bundle there, which the new bundle replaces")
    return OutputDir(dest, True, owned, tuple(foreign))


def carry_foreign(out: OutputDir, new_root: Path) -> None:
    """Hard-link every foreign entry of the old bundle into ``new_root`` (before the swap), so
    the swap keeps them. Raises ExplorerError (nothing is lost: the old bundle is untouched)
    if one cannot be kept."""
    for rel in out.foreign:
        source = out.path / rel
        if source.is_dir() and not source.is_symlink():
            for dirpath, dirnames, filenames in os.walk(source):
                sub = Path(dirpath).relative_to(out.path)
                _make_dir(new_root / sub, Path(dirpath), out)
                for name in filenames + [d for d in dirnames if os.path.islink(os.path.join(dirpath, d))]:
                    _link(out, (sub / name).as_posix(), new_root)
        else:
            _link(out, rel, new_root)


def _make_dir(target: Path, source: Path, out: OutputDir) -> None:
    if target.is_dir() and not target.is_symlink():
        return
    try:
        target.mkdir(parents=True)
        shutil.copymode(source, target)
    except OSError as err:
        raise ExplorerError(
            f"{out.path}: cannot keep {source.relative_to(out.path)}, which tvm-explorer did "
            f"not write ({err.strerror}); nothing was replaced"
        ) from None


def _link(out: OutputDir, rel: str, new_root: Path) -> None:
    source, target = out.path / rel, new_root / rel
    if target.exists() or target.is_symlink():
        raise ExplorerError(
            f"{source}: tvm-explorer did not write this file, and the new bundle has a file "
            "of that name; move it away and compile again (nothing was replaced)"
        )
    _make_dir(target.parent, source.parent, out)
    try:
        os.link(source, target, follow_symlinks=False)
        info = target.lstat()
    except OSError as err:
        raise ExplorerError(
            f"{source}: cannot keep this file, which tvm-explorer did not write "
            f"({err.strerror}); move it away and compile again (nothing was replaced)"
        ) from None
    out.carried[rel] = (info.st_dev, info.st_ino)


def remove_replaced(old_root: Path, out: OutputDir) -> list[str]:
    """After the swap, delete from the replaced bundle (now at ``old_root``) only the files
    the tool wrote and the links it carried over; returns whatever else is left (a file
    dropped in during the instant of the swap), which is never deleted."""
    left: list[str] = []
    for dirpath, dirnames, filenames in os.walk(old_root, topdown=False):
        for name in filenames + [d for d in dirnames if os.path.islink(os.path.join(dirpath, d))]:
            path = Path(dirpath, name)
            rel = path.relative_to(old_root).as_posix()
            try:
                info = path.lstat()
                carried = out.carried.get(rel) == (info.st_dev, info.st_ino)
                if (rel in out.owned and stat.S_ISREG(info.st_mode)) or carried:
                    path.unlink()
                else:
                    left.append(rel)
            except OSError:
                left.append(rel)
        if Path(dirpath) != old_root:
            try:
                os.rmdir(dirpath)
            except OSError:
                pass
    try:
        os.rmdir(old_root)
    except OSError:
        pass
    return left


def remove_stale(path: Path) -> list[str]:
    """Remove the temporary sibling of a compile that was killed. Before its commit it holds
    only what the tool wrote (no manifest yet); from the commit on, its manifest says which
    files are the tool's, and a kept foreign file has a second name in the bundle
    (``st_nlink`` > 1). Anything else is left in place and returned."""
    owned = _bundle_files(path)
    if owned is None:
        shutil.rmtree(path, ignore_errors=True)
        return []
    carried: dict[str, tuple[int, int]] = {}
    for dirpath, dirnames, filenames in os.walk(path):
        for name in filenames + [d for d in dirnames if os.path.islink(os.path.join(dirpath, d))]:
            try:
                info = os.lstat(os.path.join(dirpath, name))
            except OSError:
                continue
            if info.st_nlink > 1:
                carried[Path(dirpath, name).relative_to(path).as_posix()] = (info.st_dev, info.st_ino)
    return remove_replaced(path, OutputDir(path, True, owned, (), carried))

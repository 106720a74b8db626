"""Write a bundle atomically: everything goes into a temporary sibling directory, which
replaces the destination only once complete. A failed or interrupted compile leaves the
previous bundle (or nothing) in place, never something that loads as good."""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import datetime as _dt
import json
import os
import re
import shutil
import signal
import sys
from pathlib import Path

from tvm_explorer.bundle.format import FORMAT_NAME, INDEX, LANGUAGE_BY_SUFFIX, MANIFEST, SCHEMA_VERSION, STAGES
from tvm_explorer.bundle.index import Range
from tvm_explorer.bundle.ownership import carry_foreign, inspect_output, remove_replaced, remove_stale
from tvm_explorer.errors import ExplorerError
from tvm_explorer.provenance import OriginTable

_RENAME_EXCHANGE = 2

COMMITTED: list[Path] = []
"""Destinations this process has committed a bundle to (the CLI tells an interrupt that came
too late to stop the commit from one that kept the previous bundle)."""

COMMIT_CLAIMS: list = []
"""Callables run as the commit begins (signals blocked, nothing moved yet): a supervised
child claims its commit there, after which its supervisor no longer stops it at once
(``supervise/stopping.py``); one that raises (KeyboardInterrupt: the stop came first)
cancels the commit."""

COMMIT_GUARDS: list = []
"""Callables run right before a bundle is swapped into place (signals blocked); one that
raises ExplorerError cancels the commit (the compiling child registers "my parent is still
alive", so that an orphaned compile never replaces a bundle)."""


def _exchange(a: Path, b: Path) -> bool:
    """Atomically swap two paths (Linux renameat2); False where unsupported."""
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
        fn = libc.renameat2
    except (OSError, AttributeError):
        return False
    at_fdcwd = -100
    rc = fn(at_fdcwd, os.fsencode(a), at_fdcwd, os.fsencode(b), _RENAME_EXCHANGE)
    return rc == 0


def check_destination(dest: str | os.PathLike, inputs=()) -> Path:
    """Validate an output path before any work is done; raise ExplorerError if unusable
    (see ``ownership.inspect_output``: only a new or empty directory or a bundle this tool
    wrote may be replaced)."""
    dest = Path(dest)
    inspect_output(dest, inputs)
    parent = dest.absolute().parent
    if not parent.is_dir():
        what = "is not a directory" if parent.exists() else "does not exist"
        raise ExplorerError(f"{dest}: parent directory {parent} {what}")
    if not os.access(parent, os.W_OK | os.X_OK):
        raise ExplorerError(f"{dest}: parent directory {parent} is not writable")
    return dest


@contextlib.contextmanager
def _writing(dest: Path):
    """File system failures while writing (read-only places, a full disk) as one message."""
    try:
        yield
    except OSError as err:
        reason = err.strerror or type(err).__name__
        where = f" ({err.filename})" if err.filename else ""
        raise ExplorerError(f"{dest}: cannot write the bundle: {reason}{where}") from None


def _remove_stale_siblings(dest: Path) -> None:
    """Remove ``.DEST.tmp-<pid>`` / ``.DEST.old-<pid>`` left by compiles that were killed
    (their process is gone); never touches one whose process still runs."""
    pattern = re.compile(re.escape(f".{dest.name}.") + r"(?:tmp|old)-(\d+)")
    try:
        siblings = list(dest.parent.iterdir())
    except OSError:
        return
    for path in siblings:
        match = pattern.fullmatch(path.name)
        if not match or int(match.group(1)) == os.getpid() or path.is_symlink() or not path.is_dir():
            continue
        try:
            os.kill(int(match.group(1)), 0)
            continue  # still running (or not ours to judge)
        except ProcessLookupError:
            if remove_stale(path):
                keep = dest.parent / f"{dest.name}.kept-{match.group(1)}"
                with contextlib.suppress(OSError):
                    os.rename(path, keep)
        except (PermissionError, OverflowError, ValueError):
            continue


class BundleWriter:
    """Collects documents and their ranges, then commits the bundle in one step."""

    def __init__(self, dest: str | os.PathLike, inputs=()):
        self.inputs = tuple(inputs)
        self.dest = check_destination(dest, self.inputs).absolute()
        self.tmp = self.dest.parent / f".{self.dest.name}.tmp-{os.getpid()}"
        _remove_stale_siblings(self.dest)
        with _writing(self.dest):
            if self.tmp.exists():
                shutil.rmtree(self.tmp)
            self.tmp.mkdir()
        self.documents: list[dict] = []
        self.passes: list[dict] = []
        self.traces: list[dict] = []
        self.files: set[str] = set()  # auxiliary files (add_file), listed in the manifest
        self._index: dict[str, str] = {}  # document path -> its index entry as JSON
        self._done = False

    def add_document(
        self, path: str, text: str, ranges: list[Range], stage: str, pass_index: int | None = None, **extra
    ) -> None:
        """Write one document and remember its index entry."""
        assert stage in STAGES
        full = self.tmp / path
        with _writing(self.dest):
            full.parent.mkdir(parents=True, exist_ok=True)
            with open(full, "w", encoding="utf-8", newline="\n") as fh:
                fh.write(text)
        suffix = os.path.splitext(path)[1]
        entry: dict[str, object] = {
            "path": path,
            "stage": stage,
            "language": LANGUAGE_BY_SUFFIX.get(suffix, "plaintext"),
        }
        if pass_index is not None:
            entry["pass_index"] = pass_index
        entry.update(extra)
        self.documents.append(entry)
        ordered = sorted(ranges, key=lambda r: (r.start, -r.end))
        # Kept as JSON text until commit: far smaller than the equivalent Python lists.
        self._index[path] = json.dumps(
            {"length": len(text), "ranges": [r.to_json() for r in ordered]}, separators=(",", ":")
        )

    def has_document(self, path: str) -> bool:
        """Whether a document ``path`` was added."""
        return path in self._index

    def written(self, path: str) -> tuple[str, list]:
        """Text and index ranges (as stored in index.json) of a document added so far."""
        with open(self.tmp / path, encoding="utf-8", newline="") as fh:
            text = fh.read()
        return text, json.loads(self._index[path])["ranges"]

    def add_file(self, path: str, text: str) -> None:
        """Write an auxiliary file (schedule trace, costs.json, numerics.json …) that is not an
        indexed document; the manifest lists it under ``files`` (so a later compile knows the
        tool wrote it)."""
        full = self.tmp / path
        with _writing(self.dest):
            full.parent.mkdir(parents=True, exist_ok=True)
            full.write_text(text, encoding="utf-8")
        self.files.add(path)

    def commit(self, manifest: dict, layers: list[dict], origins: OriginTable) -> Path:
        """Write index and manifest (last), then move the bundle into place."""
        with _writing(self.dest):
            return self._commit(manifest, layers, origins)

    def _commit(self, manifest: dict, layers: list[dict], origins: OriginTable) -> Path:
        order = {s: i for i, s in enumerate(STAGES)}
        docs = sorted(self.documents, key=lambda d: (order[d["stage"]], d.get("pass_index", -1)))
        head = json.dumps(
            {"schema_version": SCHEMA_VERSION, "layers": layers, "origin_sets": origins.to_json()},
            separators=(",", ":"),
        )
        documents = ",".join(f"{json.dumps(path)}:{entry}" for path, entry in self._index.items())
        with open(self.tmp / INDEX, "w", encoding="utf-8") as fh:
            fh.write(f'{head[:-1]},"documents":{{{documents}}}}}')
        full = {
            "format": FORMAT_NAME,
            "schema_version": SCHEMA_VERSION,
            "complete": True,
            "created": _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
            **manifest,
            "documents": docs,
            "passes": self.passes,
            "traces": self.traces,
            "files": sorted(self.files),
        }
        with open(self.tmp / MANIFEST, "w", encoding="utf-8") as fh:
            json.dump(full, fh, indent=1)
            fh.flush()
            os.fsync(fh.fileno())
        # No interrupt between the swap and the bookkeeping: a signal arriving now is
        # delivered once the new bundle is in place (and reported as such by the CLI).
        stop = {signal.SIGINT, signal.SIGTERM, signal.SIGUSR1}
        previous = signal.pthread_sigmask(signal.SIG_BLOCK, stop)
        try:
            for claim in COMMIT_CLAIMS:
                claim()
            self._swap_into_place()
            self._done = True
            COMMITTED.append(self.dest)
        finally:
            signal.pthread_sigmask(signal.SIG_SETMASK, previous)
        return self.dest

    def _swap_into_place(self) -> None:
        for guard in COMMIT_GUARDS:
            guard()
        # Checked again now: the directory may have changed while TVM compiled.
        out = inspect_output(self.dest, self.inputs)
        if not out.exists:
            os.rename(self.tmp, self.dest)
            return
        carry_foreign(out, self.tmp)
        if _exchange(self.tmp, self.dest):
            old = self.tmp
        else:
            old = self.dest.parent / f".{self.dest.name}.old-{os.getpid()}"
            os.rename(self.dest, old)
            os.rename(self.tmp, self.dest)
        left = remove_replaced(old, out)
        if left:
            keep = self.dest.parent / f"{self.dest.name}.kept-{os.getpid()}"
            os.rename(old, keep)
            print(
                f"tvm-explorer: warning: {len(left)} file(s) appeared in {self.dest} while "
                f"it was replaced; they are kept in {keep}",
                file=sys.stderr,
            )

    def abort(self) -> None:
        """Remove everything written so far (the destination is untouched)."""
        if not self._done:
            shutil.rmtree(self.tmp, ignore_errors=True)

"""Reading a bundle's files safely: each opened and checked in one step (inside the bundle, a
regular file, within its size limit and the bundle's budget), never blocking on a FIFO, and
compared with the version loaded (``BundleChanged``). The limits a loader keeps are here too.
What is opened is checked on the descriptor (``safe_open``)."""

from __future__ import annotations

import errno
import json
import os
import stat
from collections.abc import Callable
from pathlib import Path

from tvm_explorer.bundle.safe_open import open_inside
from tvm_explorer.errors import BundleError

MAX_FILE_BYTES = 256 * 1024**2
"""Largest manifest, index or document a loader reads (a generated C file of a large model is
a few MB); anything bigger is reported as damaged instead of filling the memory."""


MAX_BUNDLE_BYTES = 1024**3
"""Most bytes of files (manifest, index, documents) one bundle may make a loader read when it
loads (the limit per file alone let four sparse 250 MiB documents take the server to 1.2 GB).
Documents are read once to be checked and let go, so what stays in memory is bounded by the
caches (``TEXT_CACHE_CHARS``), not by this: it bounds the load's work (about a second per
200 MiB here), and lets a bundle ten times the largest real ones load."""


MAX_SECTION_BYTES = 16 * 1024**2
"""Largest ``numerics.json``, ``costs.json`` or ``bisect.json`` a loader reads. These are
parsed into Python objects whole (about 25 bytes of memory per byte of JSON: a 114 MiB
numerics.json took the server to 3 GB); a real one is a few hundred bytes per layer, so
16 MiB is ~50,000 layers. A larger one is reported, naming the file, and left out: the rest
of the bundle answers."""


MAX_OPEN_DOCUMENTS = 256
"""Most documents one loaded bundle keeps open (see ``Bundle``; a real bundle has 30-100),
and at most a sixteenth of the process's open-files limit (``open_documents_cap``): a bundle
of 100,000 documents held every one open and the server ran out of descriptors."""


def open_documents_cap() -> int:
    """How many documents a bundle loaded now may keep open (``MAX_OPEN_DOCUMENTS``)."""
    try:
        import resource

        soft = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
    except (ImportError, OSError, ValueError):
        return 64
    if soft == getattr(resource, "RLIM_INFINITY", -1) or soft < 0:
        return MAX_OPEN_DOCUMENTS
    return max(8, min(MAX_OPEN_DOCUMENTS, soft // 16))


EAGER_DOCUMENTS = 2000
"""Documents a load reads and checks before the bundle answers (``preload``); a bundle with
more is checked in its index, names and file identities at load, and its documents' texts as
they are first read and by ``check_rest`` in the background. Reading every document of a
bundle of 100,000 took most of a minute, during which none of it answered."""


TEXT_CACHE_CHARS = 8 * 1024**2
"""Most characters of document text a loaded bundle keeps in memory (the texts read last);
others are read again from disk when asked for (a 4 MB document in ~1.5 ms here, from the
file held open since the load)."""


class BundleChanged(BundleError):
    """A document is no longer the file the bundle was loaded with (a recompile or a copy
    replaced it): nothing from it is answered; the watcher reloads the whole bundle."""


class BundleTooLarge(BundleError):
    """The bundle's files together exceed ``MAX_BUNDLE_BYTES`` (the whole bundle is refused,
    not one document)."""


TooLarge = Callable[[int], BundleError]
"""What a read raises for a file of ``size`` bytes over its limit (``read_regular``)."""


def read_regular(
    path: Path,
    what: str,
    root: Path | None = None,
    limit: int = MAX_FILE_BYTES,
    too_large: TooLarge | None = None,
    identity: tuple | None = None,
) -> bytes:
    """The bytes of ``path`` if it is a regular file of sane size. FIFOs, devices and
    directories are refused without blocking (a FIFO named like a document must not hang
    the reader). With ``root``, what is opened must lie inside that directory (checked on the
    open file: see ``safe_open``). A file over ``limit`` bytes raises ``too_large(size)``
    when given (a BundleError naming the file otherwise), before anything is read. With
    ``identity`` (see ``file_identity``), a file that is not that one raises BundleChanged."""
    fd = open_regular(path, what, root)
    try:
        return read_open(fd, path, what, limit, too_large, identity)
    finally:
        os.close(fd)


def open_regular(path: Path, what: str, root: Path | None = None) -> int:
    """A read-only descriptor of ``path`` (inside ``root`` when given; never blocks on a FIFO),
    or BundleError."""
    try:
        if root is not None:
            return open_inside(root, path, what)
        return os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except FileNotFoundError:
        raise BundleError(f"{path}: missing {what}") from None
    except OSError as err:
        raise BundleError(f"{path}: cannot read {what} ({describe_os_error(err)})") from None


def describe_os_error(err: OSError) -> str:
    """``err``'s reason, saying so when it is this process's (out of descriptors), not the
    file's: "cannot read manifest (Too many open files)" sent users looking at a good file."""
    if err.errno in (errno.EMFILE, errno.ENFILE):
        try:
            import resource

            limit = f" (its limit is {resource.getrlimit(resource.RLIMIT_NOFILE)[0]})"
        except (ImportError, OSError, ValueError):
            limit = ""
        scope = "this process" if err.errno == errno.EMFILE else "the system"
        return f"{scope} has too many files open{limit}; the file itself may be fine"
    return err.strerror or str(err)


def read_open(
    fd: int,
    path: Path,
    what: str,
    limit: int = MAX_FILE_BYTES,
    too_large: TooLarge | None = None,
    identity: tuple | None = None,
) -> bytes:
    """The whole content of the open file ``fd`` (from its start, whatever was read before:
    see ``read_regular`` for the checks)."""
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise BundleError(f"{path}: {what} is not a regular file")
        if identity is not None and file_identity(info) != identity:
            raise BundleChanged(f"{path}: {what} changed on disk since the bundle was loaded")
        if info.st_size > MAX_FILE_BYTES:
            raise BundleError(
                f"{path}: {what} is {info.st_size / 2**20:.0f} MiB, more than the "
                f"{MAX_FILE_BYTES // 2**20} MiB a bundle file may have"
            )
        if too_large is not None and info.st_size > limit:
            raise too_large(info.st_size)
        chunks, total = [], 0
        while True:
            chunk = os.pread(fd, 1 << 20, total)
            if not chunk:
                break
            total += len(chunk)
            if total > min(limit, MAX_FILE_BYTES):
                if too_large is not None and total > limit:
                    raise too_large(total)
                raise BundleError(f"{path}: {what} grew past {MAX_FILE_BYTES // 2**20} MiB while read")
            chunks.append(chunk)
        return b"".join(chunks)
    except OSError as err:
        raise BundleError(f"{path}: cannot read {what} ({describe_os_error(err)})") from None


def file_identity(info: os.stat_result) -> tuple:
    """What tells one version of a file from another: device, inode, size, modification time
    (what the registry's signature compares too)."""
    return (info.st_dev, info.st_ino, info.st_size, info.st_mtime_ns)


def read_file(root: Path, name: str, what: str, charge=None) -> bytes:
    """The bytes of the bundle file ``name`` (charged to ``charge``, a ``Budget``, when
    given); errors name ``root/name`` as the user wrote it, not its resolved path."""
    path = root / name
    full = resolve_inside(root, name, what)
    try:
        if charge is None:
            return read_regular(full, what, root)
        data = read_regular(full, what, root, *charge.room(path, what))
        charge(len(data))
        return data
    except BundleError as err:
        raise BundleError(str(err).replace(str(full), str(path), 1)) from None


def read_json(root: Path, name: str, what: str, charge=None):
    return parse_json(read_file(root, name, what, charge), root / name, what)


def parse_json(data: bytes, path: Path, what: str):
    try:
        return json.loads(data.decode("utf-8"))
    except (ValueError, RecursionError) as err:  # bad UTF-8 or JSON, an int of 5000 digits
        raise BundleError(f"{path}: {what} is not readable JSON ({err})") from None


def read_section(root: Path, name: str, what: str, budget=None):
    """The parsed JSON of the optional section file ``name`` (``numerics.json``, …), or None
    when the bundle has none. Opened and checked in one step (inside the bundle, a regular
    file: see ``read_regular``), at most ``MAX_SECTION_BYTES``, charged to ``budget`` (a
    ``Budget``) when given. Raises BundleError naming the file."""
    path = root / name
    if not os.path.lexists(path):
        return None

    def too_large(size: int) -> BundleError:
        return BundleError(
            f"{path}: {what} is {size / 2**20:.0f} MiB, more than the "
            f"{MAX_SECTION_BYTES // 2**20} MiB a {name} may have; it is left out"
        )

    limit = MAX_SECTION_BYTES
    if budget is not None and budget.left < limit:
        limit, too_large = budget.room(path, what)
    full = resolve_inside(root, name, what)
    try:
        data = read_regular(full, what, root, limit, too_large)
    except BundleError as err:
        raise type(err)(str(err).replace(str(full), str(path), 1)) from None
    if budget is not None:
        budget(len(data))
    return parse_json(data, path, what)


def resolve_inside(root: Path, rel: object, what: str = "document", dirs: dict | None = None) -> Path:
    """``root/rel`` if it stays inside ``root`` (after following symlinks), else BundleError.
    ``dirs`` (a dict kept across calls) remembers resolved directories: a load of 20,000
    documents spent 7 s resolving every component of every path again. This is a check of
    names only; what is opened is checked again on the descriptor (``safe_open``)."""
    check_name(root, rel, what)
    assert isinstance(rel, str)  # check_name refused any other
    try:
        full = _resolve(root, rel, dirs)
    except (OSError, RuntimeError) as err:  # symlink loops
        raise BundleError(f"{root}: {what} path {rel!r} cannot be resolved ({err})") from None
    named = str(full)
    if named != str(root) and not named.startswith(str(root).rstrip("/") + "/"):
        raise BundleError(f"{root}: {what} path {rel!r} leads outside the bundle")
    return full


def check_name(root: Path, rel: object, what: str = "document") -> None:
    """BundleError unless ``rel`` is a relative path that stays inside as written (no ``..``,
    no absolute or empty part): the check of ``resolve_inside`` before any symlink."""
    if not isinstance(rel, str) or not rel or rel.startswith(("/", "\\")) or "\x00" in rel:
        raise BundleError(f"{root}: {what} path {rel!r} is not a relative path")
    parts = rel.split("/")
    if any(p in ("", ".", "..") for p in parts) or os.path.isabs(rel) or "\\" in rel:
        raise BundleError(f"{root}: {what} path {rel!r} leaves the bundle")


def _resolve(root: Path, rel: str, dirs: dict | None) -> Path:
    if dirs is None:
        return (root / rel).resolve()
    parent, _, name = rel.rpartition("/")
    real = dirs.get(parent)
    if real is None:
        real = dirs[parent] = (root / parent).resolve() if parent else root
    candidate = real / name
    return candidate.resolve() if candidate.is_symlink() else candidate


def resolve_and_stat(root: Path, rel: str, dirs: dict) -> os.stat_result | None:
    """``resolve_inside(root, rel, dirs=dirs)``'s check (BundleError if ``rel`` leaves the
    bundle) and the status of the file it names (None: missing or unreadable), with one
    ``lstat`` for a name that is not a symlink: a load of 100,000 documents resolved, then
    identified, then measured every document, each a system call."""
    parent, _, name = rel.rpartition("/")
    real = dirs.get(parent)
    if real is None:
        try:
            real = dirs[parent] = (root / parent).resolve() if parent else root
        except (OSError, RuntimeError) as err:
            raise BundleError(f"{root}: document path {rel!r} cannot be resolved ({err})") from None
        named = str(real)
        if named != str(root) and not named.startswith(str(root).rstrip("/") + "/"):
            raise BundleError(f"{root}: document path {rel!r} leads outside the bundle")
    try:
        info = os.lstat(real / name)
    except (OSError, ValueError):
        return None
    if not stat.S_ISLNK(info.st_mode):
        return info
    full = resolve_inside(root, rel, dirs=dirs)
    try:
        return os.stat(full)
    except (OSError, ValueError):
        return None


class Budget:
    """What a bundle's files may still make a loader hold (``budget(n)`` charges ``n``)."""

    def __init__(self, root: Path, total: int):
        self.root, self.total, self.left = root, total, total

    def room(self, path: Path, what: str) -> tuple[int, TooLarge]:
        """``(limit, too_large)`` arguments of ``read_regular`` for the next file."""

        def too_large(size: int) -> BundleTooLarge:
            return BundleTooLarge(
                f"{self.root}: bundle is too large: its files hold more than the "
                f"{self.total // 2**20} MiB one bundle may use ({path.name}, {what}, is "
                f"{size / 2**20:.0f} MiB with {self.left / 2**20:.0f} MiB left); it is not loaded"
            )

        return self.left, too_large

    def __call__(self, n: int) -> None:
        self.left -= n


def dup_descriptor(fd: int, path: Path, what: str) -> int:
    try:
        return os.dup(fd)
    except OSError as err:
        raise BundleError(f"{path}: cannot read {what} ({describe_os_error(err)})") from None


def close_all(fds: dict[str, int]) -> None:
    for fd in fds.values():
        try:
            os.close(fd)
        except OSError:
            pass
    fds.clear()

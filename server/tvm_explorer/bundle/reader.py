"""Load a bundle written by ``tvm-explorer compile`` and answer provenance questions.

Loading validates everything a damaged or hostile bundle could get wrong (JSON, schema,
paths leading outside the bundle, ranges past the end of a document) and raises
``BundleError`` naming the file; it never executes anything from the bundle.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import stat
import threading
import weakref
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

from tvm_explorer.bundle.format import FORMAT_NAME, INDEX, MANIFEST, SCHEMA_VERSION, STAGES
from tvm_explorer.bundle.index import DocumentIndex
from tvm_explorer.bundle.index_load import Prepare, load_index
from tvm_explorer.bundle.safe_open import open_inside
from tvm_explorer.errors import BundleError

if TYPE_CHECKING:  # the sections are read (and their modules imported) on demand
    from tvm_explorer.bundle.sections.bisect import BisectDocument
    from tvm_explorer.bundle.sections.costs import CostsDocument
    from tvm_explorer.bundle.sections.memory import MemoryDocument
    from tvm_explorer.bundle.sections.numerics import NumericsDocument
    from tvm_explorer.bundle.sections.sass import SassDocument

_Section = TypeVar("_Section")


@dataclass(frozen=True)
class Layer:
    """One operator of the model (a TFLite operator, an ONNX node, a PyTorch graph node)."""

    id: int
    subgraph: int
    op_index: int
    opcode: str
    outputs: tuple[str, ...]
    output_types: tuple[dict, ...]
    name: str = ""  # TF layer name, ONNX node name, PyTorch module path/node
    module_class: str = ""  # PyTorch: class of the innermost module (``Conv2d``)
    source: tuple[str, int] | None = None  # the innermost model-code line (file, line), when known
    stack: tuple[tuple[str, int, str], ...] = ()  # every frame (file, line, function), entry first
    # Model Explorer's ids of the node in the original model file (graph id, node id), when
    # the compile recorded them (``tvm-explorer overlays``)
    explorer_key: tuple[str, str] | None = None


def _explorer_key(raw) -> tuple[str, str] | None:
    """A layer's ``{"graph", "node"}`` Model Explorer entry, or None when absent or malformed."""
    if isinstance(raw, dict) and isinstance(raw.get("graph"), str) and isinstance(raw.get("node"), str):
        return raw["graph"], raw["node"]
    return None


def _stack(raw) -> tuple[tuple[str, int, str], ...]:
    """A layer's ``stack`` entry (frames ``{"file", "line", "function"}``); malformed frames
    are left out, a missing or malformed entry is no stack (older bundles have none)."""
    if not isinstance(raw, list):
        return ()
    return tuple(
        (f["file"], f["line"], f["function"] if isinstance(f.get("function"), str) else "")
        for f in raw
        if isinstance(f, dict) and isinstance(f.get("file"), str) and isinstance(f.get("line"), int)
    )


def _source(raw) -> tuple[str, int] | None:
    """A layer's ``{"file", "line"}`` source entry, or None when absent or malformed."""
    if isinstance(raw, dict) and isinstance(raw.get("file"), str) and isinstance(raw.get("line"), int):
        return raw["file"], raw["line"]
    return None


@dataclass(frozen=True)
class Document:
    """One text document of a bundle."""

    path: str
    stage: str
    language: str
    pass_index: int | None
    order: int
    source: str | None = None  # the document this one was compiled from (SASS: its CUDA)


@dataclass(frozen=True)
class Origin:
    """A layer that a piece of text came from."""

    layer: Layer
    is_output: bool

    def to_json(self) -> dict:
        """The shape printed by ``tvm-explorer origins --json``."""
        return {
            "subgraph": self.layer.subgraph,
            "op_index": self.layer.op_index,
            "opcode": self.layer.opcode,
            "outputs": list(self.layer.outputs),
            "is_output": self.is_output,
            **layer_extras(self.layer),
        }


def layer_extras(layer: Layer) -> dict:
    """``name`` (when the bundle has one), ``module_class`` and ``source`` (when known) of a
    layer, as JSON."""
    out: dict = {}
    if layer.name:
        out["name"] = layer.name
    if layer.module_class:
        out["module_class"] = layer.module_class
    if layer.source is not None:
        out["source"] = {"file": layer.source[0], "line": layer.source[1]}
    if layer.stack:
        out["stack"] = [{"file": f, "line": n, "function": fn} for f, n, fn in layer.stack]
    return out


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


def _read_file(root: Path, name: str, what: str, charge=None) -> bytes:
    """The bytes of the bundle file ``name`` (charged to ``charge``, a ``_Budget``, when
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


def _read_json(root: Path, name: str, what: str, charge=None):
    return _parse_json(_read_file(root, name, what, charge), root / name, what)


def _parse_json(data: bytes, path: Path, what: str):
    try:
        return json.loads(data.decode("utf-8"))
    except (ValueError, RecursionError) as err:  # bad UTF-8 or JSON, an int of 5000 digits
        raise BundleError(f"{path}: {what} is not readable JSON ({err})") from None


def read_validated_section(bundle: Bundle, name: str, what: str, validate: Callable, error: type[Exception]):
    """The optional section ``name`` of ``bundle`` read (``read_section``) and checked by
    ``validate(data, number of layers)``, or None when the bundle has none; a check that fails
    (``error``) is a BundleError naming the file."""
    data = read_section(bundle.root, name, what, bundle.budget)
    if data is None:
        return None
    try:
        return validate(data, len(bundle.layers))
    except error as err:
        raise BundleError(f"{bundle.root / name}: {err}") from None


def read_section(root: Path, name: str, what: str, budget=None):
    """The parsed JSON of the optional section file ``name`` (``numerics.json``, …), or None
    when the bundle has none. Opened and checked in one step (inside the bundle, a regular
    file: see ``read_regular``), at most ``MAX_SECTION_BYTES``, charged to ``budget`` (a
    ``_Budget``) when given. Raises BundleError naming the file."""
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
    return _parse_json(data, path, what)


def resolve_inside(root: Path, rel: object, what: str = "document", dirs: dict | None = None) -> Path:
    """``root/rel`` if it stays inside ``root`` (after following symlinks), else BundleError.
    ``dirs`` (a dict kept across calls) remembers resolved directories: a load of 20,000
    documents spent 7 s resolving every component of every path again. This is a check of
    names only; what is opened is checked again on the descriptor (``safe_open``)."""
    _check_name(root, rel, what)
    assert isinstance(rel, str)  # _check_name refused any other
    try:
        full = _resolve(root, rel, dirs)
    except (OSError, RuntimeError) as err:  # symlink loops
        raise BundleError(f"{root}: {what} path {rel!r} cannot be resolved ({err})") from None
    named = str(full)
    if named != str(root) and not named.startswith(str(root).rstrip("/") + "/"):
        raise BundleError(f"{root}: {what} path {rel!r} leads outside the bundle")
    return full


def _check_name(root: Path, rel: object, what: str = "document") -> None:
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


def _resolve_and_stat(root: Path, rel: str, dirs: dict) -> os.stat_result | None:
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


class _Budget:
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


_DOCUMENT = "document listed in the manifest"

_LINE_WINDOW = 4096
"""Bytes read before and after a span to find its lines' ends (doubled until found)."""


def _widen(text: str, start: int, end: int) -> tuple[int, int, str]:
    """``[start, end)`` of ``text`` widened to whole lines (see ``Bundle.whole_lines``)."""
    lo = text.rfind("\n", 0, start) + 1
    hi = text.find("\n", max(end - 1, start))
    hi = len(text) if hi < 0 else hi
    return lo, hi, text[lo:hi]


def _piece_around(fd: int, size: int, start: int, end: int) -> tuple[int, int, str] | None:
    """``_widen`` on the file ``fd`` of ``size`` bytes, one byte per character, reading only
    around the span (None: the bytes are not plain ASCII without carriage returns)."""
    window = _LINE_WINDOW
    while True:
        lo, hi = max(0, start - window), min(size, max(end, start + 1) + window)
        data = os.pread(fd, hi - lo, lo)
        if len(data) != hi - lo:
            raise OSError(errno.EIO, "short read")
        first = data.rfind(b"\n", 0, start - lo) + 1
        last = data.find(b"\n", max(end - 1, start) - lo)
        if (first > 0 or lo == 0) and (last >= 0 or hi == size):
            break
        window *= 4
    last = len(data) if last < 0 else last
    piece = data[first:last]
    if not piece.isascii() or b"\r" in piece:
        return None
    return lo + first, lo + last, piece.decode("ascii")


def _pieces_around(fd: int, size: int, spans: list[tuple[int, int]]) -> list[tuple[int, int, str]] | None:
    """``_piece_around`` of each span (in order), spans near each other read in one piece."""
    out = []
    i = 0
    while i < len(spans):
        j = i
        while j + 1 < len(spans) and spans[j + 1][0] - spans[j][1] < _LINE_WINDOW:
            j += 1
        lo = max(0, min(spans[i][0], size) - _LINE_WINDOW)
        hi = min(size, max(spans[j][1], spans[i][0] + 1) + _LINE_WINDOW)
        data = os.pread(fd, hi - lo, lo)
        if len(data) != hi - lo:
            raise OSError(errno.EIO, "short read")
        for start, end in spans[i : j + 1]:
            start, end = min(start, size), min(end, size)
            first = data.rfind(b"\n", 0, start - lo) + 1
            last = data.find(b"\n", max(end - 1, start) - lo)
            if (first == 0 and lo > 0) or (last < 0 and hi < size):
                piece = _piece_around(fd, size, start, end)  # a line longer than the window
            else:
                last = len(data) if last < 0 else last
                chunk = data[first:last]
                piece = (
                    (lo + first, lo + last, chunk.decode("ascii")) if chunk.isascii() and b"\r" not in chunk else None
                )
            if piece is None:
                return None
            out.append(piece)
        i = j + 1
    return out


def _merge_pieces(pieces: list[tuple[int, int, str]]) -> list[tuple[int, int, str]]:
    """Whole-line pieces in order, those that overlap or follow each other line after line joined."""
    out: list[tuple[int, int, str]] = []
    for start, end, text in sorted(pieces):
        if out and start <= out[-1][1] + 1:  # overlapping, or on the next line
            s0, e0, t0 = out[-1]
            if end > e0:
                out[-1] = (s0, end, t0 + "\n" + text[e0 + 1 - start :])
            continue
        out.append((start, end, text))
    return out


def _dup(fd: int, path: Path, what: str) -> int:
    try:
        return os.dup(fd)
    except OSError as err:
        raise BundleError(f"{path}: cannot read {what} ({describe_os_error(err)})") from None


def _close_all(fds: dict[str, int]) -> None:
    for fd in fds.values():
        try:
            os.close(fd)
        except OSError:
            pass
    fds.clear()


class Bundle:
    """A loaded, validated bundle. Document texts are read on demand (the last ones read are
    kept, up to ``TEXT_CACHE_CHARS``); indexes are loaded as compact arrays.

    Versions never mix: the documents read last (``open_documents_cap``, from ``preload``
    on) are kept open, so later reads come from the files it checked even when a recompile
    renamed the bundle away or deleted it; others are opened again (checked inside the
    bundle); and every read compares the file's identity (device, inode, size, modification time) with the one
    taken at load: a document changed in place raises ``BundleChanged`` instead of being
    answered from (the watcher then reloads the whole bundle)."""

    def __init__(self, root: str | os.PathLike, budget: int = MAX_BUNDLE_BYTES, prepare: Prepare | None = None):
        self.root = Path(root).resolve()
        if not self.root.is_dir():
            raise BundleError(f"{root}: not a bundle directory")
        self.budget = _Budget(self.root, budget)
        self._dirs: dict | None = {}  # resolved directories, while loading (``resolve_inside``)
        self.manifest = self._load_manifest()
        # The identity of every document file now (None: missing or not a regular file; its
        # read reports why), and (device, inode, size) of each for the budget.
        self._identities: dict[str, tuple | None] = {}
        self._stats: list[tuple[int, int, int]] = []
        self.documents = self._load_documents()
        self._doc_by_path = {d.path: d for d in self.documents}
        parsed = load_index(_read_file(self.root, INDEX, "provenance index", self.budget), self.root / INDEX, prepare)
        self.layers = self._load_layers(parsed.layers)
        self.origin_sets = self._load_origin_sets(parsed.origin_sets)
        self._strings = parsed.strings
        # path -> (its index, the document length it was made for) or the error that kept it
        self._indexes: dict[str, tuple[DocumentIndex, int | None] | BundleError] = {
            path: got for path, got in parsed.documents.items() if path in self._doc_by_path
        }
        # What ``prepare`` made of each document's index (see ``take_prepared``).
        self._prepared = (parsed.prepared, parsed.parts)
        del parsed
        self._damaged: dict[str, BundleError] = {}
        # Documents whose text no read has checked yet (a bundle of more than EAGER_DOCUMENTS:
        # see ``preload``): the first read of one that is damaged marks it as such.
        self._unchecked: set[str] = set()
        self.late_problems: list[BundleError] = []  # damage found by such first reads
        # Documents held open since ``preload`` checked them (the last ``MAX_OPEN_DOCUMENTS``
        # read): later reads come from these very files, even after a recompile renamed or
        # deleted them (closed with the bundle). Others are opened again by name and must be
        # the same file (identity), or BundleChanged.
        self._fds: OrderedDict[str, int] = OrderedDict()
        self._fd_lock = threading.Lock()
        self._open_cap = open_documents_cap()
        weakref.finalize(self, _close_all, self._fds)
        self._texts: OrderedDict[str, str] = OrderedDict()
        self._lock = threading.Lock()
        self._section_lock = threading.Lock()  # sections read on first use (``memory``)
        self._passing = threading.local()  # see ``passing_through``
        self._text_chars = 0
        self._layer_by_op = {(lay.subgraph, lay.op_index): lay for lay in self.layers}
        self._producer = {(lay.subgraph, name): lay for lay in self.layers for name in lay.outputs}
        # A damaged section is left out and reported (``section_problems``, by file name):
        # the rest of the bundle still answers.
        self.section_problems: dict[str, BundleError] = {}
        self.numerics = self._load_section(self._load_numerics, "numerics.json")
        self.bisect = self._load_section(self._load_bisect, "bisect.json")

    def take_prepared(self) -> tuple[object, dict[str, object]]:
        """What the ``prepare`` given to the constructor returned, and what that made of each
        document's index (by path), handed over once: (None, {}) afterwards."""
        got, self._prepared = self._prepared, (None, {})
        return got

    def _load_section(self, read: Callable[[], _Section | None], name: str) -> _Section | None:
        try:
            return read()
        except BundleTooLarge:
            raise
        except BundleError as err:
            self.section_problems[name] = err
            return None

    def _load_bisect(self) -> BisectDocument | None:
        """``bisect.json`` (``tvm-explorer bisect -o``), validated; None if absent."""
        from tvm_explorer.bundle.sections.bisect import BISECT_FILE, BisectError, validate

        data = read_section(self.root, BISECT_FILE, "bisect report", self.budget)
        if data is None:
            return None
        try:
            return validate(data)
        except BisectError as err:
            raise BundleError(f"{self.root / BISECT_FILE}: {err}") from None

    def _load_numerics(self) -> NumericsDocument | None:
        """``numerics.json`` (``compile --numerics``), validated; None if the bundle has none."""
        from tvm_explorer.bundle.sections.numerics import NUMERICS_FILE, NumericsError, validate

        data = read_section(self.root, NUMERICS_FILE, "numerics", self.budget)
        if data is None:
            return None
        try:
            return validate(data, set(self._layer_by_op))
        except NumericsError as err:
            raise BundleError(f"{self.root / NUMERICS_FILE}: {err}") from None

    # -- loading -----------------------------------------------------------------------
    def _load_manifest(self) -> dict:
        path = self.root / MANIFEST
        manifest = _read_json(self.root, MANIFEST, "manifest", self.budget)
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

    def _load_layers(self, raw) -> list[Layer]:
        if not isinstance(raw, list):
            raise BundleError(f"{self.root / INDEX}: 'layers' must be a list")
        layers = []
        try:
            for i, lay in enumerate(raw):
                if lay["id"] != i:
                    raise ValueError(f"layer {i} has id {lay['id']}")
                layers.append(
                    Layer(
                        i,
                        int(lay["subgraph"]),
                        int(lay["op_index"]),
                        str(lay["opcode"]),
                        tuple(str(o) for o in lay.get("outputs", ())),
                        tuple(lay.get("output_types", ())),
                        str(lay.get("name", "")),
                        str(lay.get("module_class", "")),
                        _source(lay.get("source")),
                        _stack(lay.get("stack")),
                        _explorer_key(lay.get("model_explorer")),
                    )
                )
        except (KeyError, TypeError, ValueError) as err:
            raise BundleError(f"{self.root / INDEX}: bad layer table ({err})") from None
        return layers

    def _load_origin_sets(self, raw) -> list[tuple[tuple[int, bool], ...]]:
        if not isinstance(raw, list):
            raise BundleError(f"{self.root / INDEX}: 'origin_sets' must be a list")
        sets = []
        for k, members in enumerate(raw):
            try:
                entry = tuple((int(lid), bool(out)) for lid, out in members)
            except (TypeError, ValueError):
                raise BundleError(f"{self.root / INDEX}: origin set {k} is malformed") from None
            if any(not 0 <= lid < len(self.layers) for lid, _ in entry):
                raise BundleError(f"{self.root / INDEX}: origin set {k} names an unknown layer")
            sets.append(entry)
        return sets

    def _load_documents(self) -> list[Document]:
        docs = []
        for order, raw in enumerate(self.manifest["documents"]):
            if not isinstance(raw, dict) or raw.get("stage") not in STAGES:
                raise BundleError(f"{self.root / MANIFEST}: document entry {order} is malformed")
            path = raw.get("path")
            _check_name(self.root, path)
            assert isinstance(path, str)  # _check_name refused any other
            info = _resolve_and_stat(self.root, path, self._dirs if self._dirs is not None else {})
            if info is not None and stat.S_ISREG(info.st_mode):
                self._identities[path] = file_identity(info)
                self._stats.append((info.st_dev, info.st_ino, info.st_size))
            else:
                self._identities[path] = None
            docs.append(
                Document(
                    path,
                    raw["stage"],
                    str(raw.get("language", "")),
                    raw.get("pass_index"),
                    order,
                    raw["source"] if isinstance(raw.get("source"), str) else None,
                )
            )
        return docs

    # -- queries -----------------------------------------------------------------------
    def costs(self) -> CostsDocument | None:
        """The validated ``costs.json`` (read once), or None if the bundle has none."""
        if not hasattr(self, "_costs"):
            from tvm_explorer.bundle.sections.costs import read_costs

            self._costs = read_costs(self)
        return self._costs

    def memory(self) -> MemoryDocument | None:
        """The validated ``memory.json`` (read once, on the first call: never at load), or
        None if the bundle has none. Raises BundleError naming the file if it is damaged
        (again on every call)."""
        with self._section_lock:
            if not hasattr(self, "_memory"):
                from tvm_explorer.bundle.sections.memory import read_memory

                try:
                    self._memory: MemoryDocument | BundleError | None = read_memory(self)
                except BundleTooLarge:
                    raise
                except BundleError as err:
                    self._memory = err
            got = self._memory
        if isinstance(got, BundleError):
            raise got
        return got

    def sass(self) -> SassDocument | None:
        """The validated ``sass.json`` (``compile --sass``; read once, when first asked), or
        None if the bundle has none or it is damaged (``section_problems`` says why)."""
        if not hasattr(self, "_sass"):
            from tvm_explorer.bundle.sections.sass import SASS_FILE, read_sass

            self._sass = self._load_section(lambda: read_sass(self), SASS_FILE)
        return self._sass

    def document(self, path: str) -> Document | None:
        """The document at bundle-relative ``path``, or None."""
        return self._doc_by_path.get(path)

    def text(self, path: str) -> str:
        """The text of a document (read from disk on demand; the last ones read are kept,
        except by a thread in ``passing_through``).
        Raises BundleChanged when the file is no longer the one the bundle was loaded with."""
        with self._lock:
            got = self._texts.get(path)
            if got is not None:
                self._texts.move_to_end(path)
                return got
        if path in self._damaged:
            return ""
        passing = getattr(self._passing, "last", None)
        if passing is not None:
            if passing[0] == path:
                return passing[1]
            text = self._read_first(path) if path in self._unchecked else self._read_text(path)
            self._passing.last = (path, text)
            return text
        identity = self._identities.get(path)
        # Room first: the texts it would evict and the one being read (its bytes, then its
        # text) never all live at once (a 4 MB document read into a full cache held 8 MB
        # more for a moment). Its size in bytes is at least its characters.
        self._evict(identity[2] if identity else 0, keep=0)
        text = self._read_first(path) if path in self._unchecked else self._read_text(path)
        with self._lock:  # requests and the load's warm-up read texts from several threads
            if path not in self._texts:
                self._texts[path] = text
                self._text_chars += len(text)
        self._evict(0, keep=1)  # other threads' texts may have come in meanwhile
        return text

    def _read_first(self, path: str) -> str:
        """The first read of a document no load checked: a damaged one answers empty from now
        on (as ``preload`` would have made it), and is listed in ``late_problems``."""
        try:
            text = self._read_text(path)
        except BundleChanged:
            raise
        except BundleError as err:
            if path in self._unchecked:
                self._unchecked.discard(path)
                self._damaged[path] = err
                self.late_problems.append(err)
            return ""
        self._unchecked.discard(path)
        return text

    def _evict(self, coming: int, keep: int) -> None:
        """Drop the texts read longest ago until ``coming`` more characters fit in the
        cache, or only ``keep`` texts are left."""
        with self._lock:
            while len(self._texts) > keep and self._text_chars + coming > TEXT_CACHE_CHARS:
                _, old = self._texts.popitem(last=False)
                self._text_chars -= len(old)

    @contextlib.contextmanager
    def passing_through(self):
        """Texts read by this thread in the block are not kept in the cache (only the last
        one, for this thread): a warm-up walking every document would otherwise fill the
        cache with texts nobody asked for, and hold them as the load's peak memory."""
        self._passing.last = ("", "")
        try:
            yield
        finally:
            self._passing.last = None

    def _open_document(self, path: str) -> tuple[int, bool, Path]:
        """A descriptor of a document's file (a copy of the one held open since the load, or
        the file opened again inside the bundle), whether it was held, and its path."""
        if path not in self._doc_by_path:
            raise BundleError(f"{self.root}: {path!r} is not a document of this bundle")
        with self._fd_lock:
            held = self._fds.get(path)
            if held is not None:  # held open since the load checked it: that very file
                self._fds.move_to_end(path)
                # A copy of its own: another thread may close the held one meanwhile (and its
                # number be reused for some other file).
                return _dup(held, self.root / path, _DOCUMENT), True, self.root / path
        full = resolve_inside(self.root, path, dirs=self._dirs)
        return open_regular(full, _DOCUMENT, self.root), False, full

    def _keep_open(self, path: str, fd: int, held: bool, full: Path) -> int | None:
        """After a read of a file not held open: hold it (None) or say to close it (``fd``)."""
        if held:
            return fd
        if self._identities.get(path) is None:  # missing when loaded, there now: not the loaded version
            raise BundleChanged(f"{full}: {_DOCUMENT} appeared after the bundle was loaded")
        return self._hold(path, fd)

    def _read_text(self, path: str, charge: bool = False) -> str:
        fd, held, full = self._open_document(path)
        what = _DOCUMENT
        identity = self._identities.get(path)
        to_close: int | None = fd
        try:
            room: tuple[int, TooLarge | None] = self.budget.room(full, what) if charge else (MAX_FILE_BYTES, None)
            data = read_open(fd, full, what, *room, identity=identity)
            to_close = self._keep_open(path, fd, held, full)
        finally:
            if to_close is not None:
                os.close(to_close)
        if charge:
            self.budget(len(data))
        try:
            # Universal newlines, like reading in text mode (lengths count "\n" once).
            text = data.decode("utf-8")
        except UnicodeDecodeError as err:
            raise BundleError(f"{full}: cannot read document ({err})") from None
        if "\r" in text:
            text = text.replace("\r\n", "\n").replace("\r", "\n")
        got = self._indexes.get(path)
        if isinstance(got, tuple) and got[1] != len(text):
            raise BundleError(f"{self.root / INDEX} ({path}): index does not match the document (stale or damaged)")
        return text

    def whole_lines(self, path: str, spans: list[tuple[int, int]]) -> list[tuple[int, int, str]]:
        """``(start, end, text)`` of each ``[start, end)`` of a document (character offsets,
        in order) widened to whole lines: ``start`` where its line starts, ``end`` where its
        last line ends (its line break left out). Pieces that come to overlap are merged.

        A document whose text is not in the cache and whose file holds one byte per character
        (its size is the length its index was made for: ASCII, as TVM prints) is read only
        around the spans, from the file checked at load: a layer's few lines of each of a
        60 MiB bundle's documents, not the 60 MiB. Other documents are read whole."""
        spans = sorted((max(0, s), max(0, e)) for s, e in spans)
        if not spans:
            return []
        with self._lock:
            text = self._texts.get(path)
        got = None
        if text is None and path not in self._damaged and self._one_byte_per_character(path):
            got = self._read_lines_around(path, spans)
        if got is None:
            text = self.text(path) if text is None else text
            got = [_widen(text, s, e) for s, e in spans]
        return _merge_pieces(got)

    def _one_byte_per_character(self, path: str) -> bool:
        identity = self._identities.get(path)
        indexed = self._indexes.get(path)
        return identity is not None and isinstance(indexed, tuple) and identity[2] == indexed[1]

    def _read_lines_around(self, path: str, spans: list[tuple[int, int]]) -> list[tuple[int, int, str]] | None:
        """``whole_lines`` read with ``pread`` around each span; None when a piece is not
        plain ASCII without carriage returns (the caller then reads the whole text)."""
        with self._fd_lock:
            held = self._fds.get(path)
            if held is not None:  # read under the lock: nobody closes it meanwhile
                self._fds.move_to_end(path)
                return self._pieces(held, path, self.root / path, spans)
        fd, held_copy, full = self._open_document(path)
        to_close: int | None = fd
        try:
            out = self._pieces(fd, path, full, spans)
            to_close = self._keep_open(path, fd, held_copy, full)
        finally:
            if to_close is not None:
                os.close(to_close)
        return out

    def _pieces(self, fd: int, path: str, full: Path, spans: list[tuple[int, int]]):
        try:
            info = os.fstat(fd)
            if file_identity(info) != self._identities.get(path):
                raise BundleChanged(f"{full}: {_DOCUMENT} changed on disk since the bundle was loaded")
            return _pieces_around(fd, info.st_size, spans)
        except OSError as err:
            raise BundleError(f"{full}: cannot read {_DOCUMENT} ({describe_os_error(err)})") from None

    def _hold(self, path: str, fd: int) -> int | None:
        """Keep ``fd`` (checked) open as ``path``'s, closing the document held longest unused
        beyond ``MAX_OPEN_DOCUMENTS``; returns ``fd`` if the caller must close it (another
        thread held one meanwhile), else None."""
        with self._fd_lock:
            if path in self._fds:
                return fd
            self._fds[path] = fd
            while len(self._fds) > self._open_cap:
                os.close(self._fds.popitem(last=False)[1])
        return None

    def index(self, path: str) -> DocumentIndex:
        """The provenance index of a document (loaded with the bundle; a damaged one raises
        its BundleError, and answers empty once ``preload`` reported it)."""
        if path in self._damaged:
            return DocumentIndex([], self._strings)
        got = self._indexes.get(path)
        if got is None:
            return DocumentIndex([], self._strings)
        if isinstance(got, BundleError):
            raise got
        return got[0]

    def origins(self, origin_set: int) -> list[Origin]:
        """The layers of an origin set."""
        return [Origin(self.layers[lid], out) for lid, out in self.origin_sets[origin_set]]

    def origins_at(self, path: str, offset: int) -> list[Origin]:
        """Origins of the innermost indexed range at ``offset`` that has any (else [])."""
        for rng in self.index(path).enclosing(offset):
            if rng.origin_set:
                return self.origins(rng.origin_set)
        return []

    def preload(self, on_document=None) -> list[BundleError]:
        """Check every document now: readable, the file the bundle was loaded with, and of the
        length its index was made for (texts are read and let go again: later queries read
        them on demand, checked against the same identity, so a bundle replaced on disk
        meanwhile is never mixed into this one).

        A document whose text or index is damaged answers empty from then on; its error is
        returned instead of raised. ``on_document(i, n, path)`` is called before each document.

        A bundle of more than EAGER_DOCUMENTS documents has its indexes checked here and its
        texts on their first read (``check_rest`` reads the others, in the background).
        """
        problems = []
        self._check_total_size()
        eager = len(self.documents) <= EAGER_DOCUMENTS
        if not eager:
            for doc in self.documents:
                got = self._indexes.get(doc.path)
                if isinstance(got, BundleError):
                    problems.append(got)
                    self._damaged[doc.path] = got
                else:
                    self._unchecked.add(doc.path)
        for i, doc in enumerate(self.documents if eager else ()):
            if on_document is not None:
                on_document(i, len(self.documents), doc.path)
            try:
                self.index(doc.path)
                self._read_text(doc.path, charge=True)
            except BundleTooLarge:
                raise  # the whole bundle is refused, not this document
            except BundleError as err:
                problems.append(err)
                self._damaged[doc.path] = err
        try:
            self.costs()
        except BundleTooLarge:
            raise
        except BundleError as err:  # a damaged costs.json costs the cost features only
            self.section_problems["costs.json"] = err
            self._costs = None
        problems.extend(self.section_problems.values())
        self._dirs = None
        return problems

    def check_rest(self, checkpoint: Callable[[], bool] = lambda: True) -> list[BundleError]:
        """Read and check every document no read has checked yet (see ``preload``), as long
        as ``checkpoint()`` says to go on; the problems found, each document once (also those
        requests found first, in ``late_problems``). Texts are not kept."""
        for doc in self.documents:
            if not self._unchecked or not checkpoint():
                break
            if doc.path in self._unchecked:
                try:
                    with self.passing_through():
                        self.text(doc.path)
                except BundleChanged:
                    break  # replaced on disk: the watcher loads it again
        found, self.late_problems[:] = list(self.late_problems), []
        return found

    def _check_total_size(self) -> None:
        """Refuse a bundle whose documents together exceed the budget before reading any
        (the reads are charged too: this only spares reading the first few)."""
        total, seen = 0, set()
        for dev, ino, size in self._stats:  # regular files, as they were at load
            if (dev, ino) in seen:
                continue
            if size > MAX_FILE_BYTES:
                continue  # never read: that document alone is reported as damaged
            seen.add((dev, ino))
            total += size
            if total > self.budget.left:
                raise BundleTooLarge(
                    f"{self.root}: bundle is too large: its documents hold more than the "
                    f"{self.budget.total // 2**20} MiB one bundle may use (at least "
                    f"{total / 2**20:.0f} MiB); it is not loaded"
                )

    def previous_document(self, path: str) -> Document | None:
        """The document one stage back in the provenance chain, or None for the model.

        Documents are ordered model -> relax passes -> tir passes -> code. Code documents
        (C, CUDA, host LLVM) are siblings: each one's previous stage is the last TIR document;
        a document compiled from another (SASS from CUDA) names it as its ``source``.
        """
        doc = self._doc_by_path.get(path)
        if doc is None or doc.order == 0:
            return None
        if doc.source is not None and doc.source in self._doc_by_path and doc.source != path:
            return self._doc_by_path[doc.source]
        for prev in reversed(self.documents[: doc.order]):
            if doc.stage != "code" or prev.stage != "code":
                return prev
        return None

    def producer(self, subgraph: int, tensor: str) -> Layer | None:
        """The layer whose output is ``tensor`` in ``subgraph``, or None (graph inputs,
        constants)."""
        return self._producer.get((subgraph, tensor))

    def layer(self, subgraph: int, op_index: int) -> Layer | None:
        """The layer of a TFLite operator, or None."""
        return self._layer_by_op.get((subgraph, op_index))

    def offset_of(self, path: str, line: int, column: int = 0) -> int:
        """Character offset of a 0-based (line, column) in a document; clamps the column."""
        text = self.text(path)
        lines = text.split("\n")
        if not 0 <= line < len(lines):
            raise BundleError(f"{path}: line {line + 1} is past the end ({len(lines)} lines)")
        start = sum(len(s) + 1 for s in lines[:line])
        return start + min(max(column, 0), len(lines[line]))

"""Load a bundle written by ``tvm-explorer compile`` and answer provenance questions.

Loading validates everything a damaged or hostile bundle could get wrong (JSON, schema,
paths leading outside the bundle, ranges past the end of a document) and raises
``BundleError`` naming the file; it never executes anything from the bundle.
"""

from __future__ import annotations

import contextlib
import os
import stat
import threading
import weakref
from collections import OrderedDict
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tvm_explorer.bundle.files import (
    EAGER_DOCUMENTS,
    MAX_BUNDLE_BYTES,
    MAX_FILE_BYTES,
    TEXT_CACHE_CHARS,
    Budget,
    BundleChanged,
    BundleTooLarge,
    TooLarge,
    check_name,
    close_all,
    describe_os_error,
    dup_descriptor,
    file_identity,
    open_documents_cap,
    open_regular,
    read_file,
    read_open,
    resolve_and_stat,
    resolve_inside,
)
from tvm_explorer.bundle.format import INDEX, MANIFEST, STAGES
from tvm_explorer.bundle.index import DocumentIndex
from tvm_explorer.bundle.index_load import Prepare, load_index
from tvm_explorer.bundle.line_pieces import merge_pieces, pieces_around, widen
from tvm_explorer.bundle.manifest import read_manifest
from tvm_explorer.bundle.sections import Section, read_checked
from tvm_explorer.bundle.sections import bisect as bisect_section
from tvm_explorer.bundle.sections import costs as costs_section
from tvm_explorer.bundle.sections import memory as memory_section
from tvm_explorer.bundle.sections import numerics as numerics_section
from tvm_explorer.bundle.sections import sass as sass_section
from tvm_explorer.bundle.sections import structure as structure_section
from tvm_explorer.bundle.sections import tuning as tuning_section
from tvm_explorer.bundle.types import Document, Layer, Origin, explorer_key_of, source_of, stack_of
from tvm_explorer.errors import BundleError

if TYPE_CHECKING:
    from tvm_explorer.bundle.sections.bisect import BisectDocument
    from tvm_explorer.bundle.sections.costs import CostsDocument
    from tvm_explorer.bundle.sections.memory import MemoryDocument
    from tvm_explorer.bundle.sections.numerics import NumericsDocument
    from tvm_explorer.bundle.sections.sass import SassDocument
    from tvm_explorer.bundle.sections.structure import ModelStructure
    from tvm_explorer.bundle.sections.tuning import TuningDocument

SECTIONS: dict[str, Section] = {
    "numerics": numerics_section.SECTION,
    "bisect": bisect_section.SECTION,
    "costs": costs_section.SECTION,
    "memory": memory_section.SECTION,
    "sass": sass_section.SECTION,
    "tuning": tuning_section.SECTION,
    "structure": structure_section.SECTION,
}
"""The optional sections, each read the same way (``Bundle.section``) as its ``SECTION`` in
``bundle/sections/`` says."""

_DOCUMENT = "document listed in the manifest"


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
        self.budget = Budget(self.root, budget)
        self._dirs: dict | None = {}  # resolved directories, while loading (``resolve_inside``)
        # Taken before the read: a swap during the load then counts as a change (BundleChanged
        # on a later section read, until the watcher's reload), never the other way round.
        self._manifest_identity = _identity_of(self.root / "manifest.json")
        self.manifest = read_manifest(self.root, self.budget)
        # The identity of every document file now (None: missing or not a regular file; its
        # read reports why), and (device, inode, size) of each for the budget.
        self._identities: dict[str, tuple | None] = {}
        self._stats: list[tuple[int, int, int]] = []
        self.documents = self._load_documents()
        self._doc_by_path = {d.path: d for d in self.documents}
        parsed = load_index(read_file(self.root, INDEX, "provenance index", self.budget), self.root / INDEX, prepare)
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
        weakref.finalize(self, close_all, self._fds)
        self._texts: OrderedDict[str, str] = OrderedDict()
        self._lock = threading.Lock()
        self._section_lock = threading.Lock()  # sections are read once (``section``)
        self._passing = threading.local()  # see ``passing_through``
        self._text_chars = 0
        self._layer_by_op = {(lay.subgraph, lay.op_index): lay for lay in self.layers}
        self._producer = {(lay.subgraph, name): lay for lay in self.layers for name in lay.outputs}
        # A damaged section is left out and reported (``section_problems``, by file name):
        # the rest of the bundle still answers.
        self.section_problems: dict[str, BundleError] = {}
        self._sections: dict[str, Any] = {}  # name -> its document, None, or the BundleError
        self.numerics: NumericsDocument | None = self.section("numerics")
        self.bisect: BisectDocument | None = self.section("bisect")

    def take_prepared(self) -> tuple[object, dict[str, object]]:
        """What the ``prepare`` given to the constructor returned, and what that made of each
        document's index (by path), handed over once: (None, {}) afterwards."""
        got, self._prepared = self._prepared, (None, {})
        return got

    def section(self, name: str) -> Any:
        """The validated document of the optional section ``name`` (one of ``SECTIONS``), read
        once, or None when the bundle has none. A damaged one is left out (None, and the error
        in ``section_problems``) or raised to the asker on every call, as its ``SECTION`` says;
        a bundle over its budget raises BundleTooLarge."""
        spec = SECTIONS[name]
        with self._section_lock:
            if name not in self._sections:
                try:
                    found = read_checked(self.root, spec, self.layers, self.budget)
                    self._check_unchanged()
                    self._sections[name] = found
                except (BundleTooLarge, BundleChanged):
                    raise
                except BundleError as err:
                    # A section gone or half there because a recompile replaced the folder
                    # is not damage of the version loaded: kept as "none", every later
                    # answer of this version would lack it.
                    self._check_unchanged()
                    if spec.damage_raises:
                        self._sections[name] = err
                    else:
                        self.section_problems[spec.file] = err
                        self._sections[name] = None
            got = self._sections[name]
        if isinstance(got, BundleError):
            raise got
        return got

    def _check_unchanged(self) -> None:
        """Raises BundleChanged if ``manifest.json`` is no longer the file loaded: whatever was
        read after the load (a lazy section) may be the new version's, and nothing of it may be
        mixed into the old one's answers (a recompile or a swap of the folder since)."""
        if _identity_of(self.root / "manifest.json") != self._manifest_identity:
            raise BundleChanged(f"{self.root}: the bundle changed on disk since it was loaded")

    # -- loading -----------------------------------------------------------------------
    def _load_layers(self, raw) -> list[Layer]:
        if not isinstance(raw, list):
            raise BundleError(f"{self.root / INDEX}: 'layers' must be a list")
        layers = []
        try:
            for i, lay in enumerate(raw):
                if lay["id"] != i:
                    raise ValueError(f"layer {i} has id {lay['id']}")
                name = str(lay.get("name", ""))
                outputs = tuple(str(o) for o in lay.get("outputs", ()))
                layers.append(
                    Layer(
                        i,
                        int(lay["subgraph"]),
                        int(lay["op_index"]),
                        str(lay["opcode"]),
                        outputs,
                        tuple(lay.get("output_types", ())),
                        name,
                        str(lay.get("module_class", "")),
                        source_of(lay.get("source")),
                        stack_of(lay.get("stack")),
                        explorer_key_of(lay.get("model_explorer")),
                        str(lay.get("display_name", "")) or name or (outputs[0] if outputs else ""),
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
            check_name(self.root, path)
            assert isinstance(path, str)  # check_name refused any other
            info = resolve_and_stat(self.root, path, self._dirs if self._dirs is not None else {})
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
        """The validated ``costs.json`` (read once), or None if the bundle has none; raises
        BundleError naming the file if it is damaged."""
        return self.section("costs")

    def memory(self) -> MemoryDocument | None:
        """The validated ``memory.json`` (read once, on the first call: never at load), or
        None if the bundle has none; raises BundleError naming the file if it is damaged."""
        return self.section("memory")

    def sass(self) -> SassDocument | None:
        """The validated ``sass.json`` (``compile --sass``; read when first asked), or None if
        the bundle has none or it is damaged (``section_problems`` says why)."""
        return self.section("sass")

    def tuning(self) -> TuningDocument | None:
        """The validated ``tuning.json`` (``compile --tune``'s ledger; read when first asked), or
        None if the bundle was compiled without tuning; raises BundleError naming the file if it
        is damaged."""
        return self.section("tuning")

    def structure(self) -> ModelStructure | None:
        """The validated ``structure.json`` (each layer's tensors and options, the graphs'
        inputs and outputs, the modules; read when first asked), or None when it is missing
        or damaged (``section_problems`` says why)."""
        return self.section("structure")

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
                return dup_descriptor(held, self.root / path, _DOCUMENT), True, self.root / path
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
            got = [widen(text, s, e) for s, e in spans]
        return merge_pieces(got)

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
            return pieces_around(fd, info.st_size, spans)
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


def _identity_of(path: Path) -> tuple | None:
    """``file_identity`` of ``path`` now (None: gone)."""
    try:
        return file_identity(os.stat(path))
    except OSError:
        return None

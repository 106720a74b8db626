"""What the features share: the bundle registry, the open documents, and the conversions
between LSP positions/URIs and the places of the navigation layer."""

from __future__ import annotations

import weakref
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from lsprotocol import types
from pygls.uris import from_fs_path, to_fs_path

from tvm_explorer.lsp.edits import EditableText
from tvm_explorer.navigation.drift import Drift
from tvm_explorer.navigation.positions import LineIndex
from tvm_explorer.navigation.registry import Registry
from tvm_explorer.navigation.view import BundleView, Keep, Place, keep_all

ENCODINGS = {"utf-8": "utf-8", "utf-16": "utf-16", "utf-32": "utf-32"}
LOCATIONS_KEPT = 50_000
"""Most LSP locations remembered per bundle (~350 bytes each; all are dropped when full:
a day of references on a large bundle otherwise kept one for every place ever answered)."""


@dataclass(frozen=True)
class Query:
    """A request position resolved to a bundle document and a bundle-text offset."""

    view: BundleView
    path: str
    offset: int
    keep: Keep


@dataclass
class OpenDocument:
    """A bundle document open in the editor, with the text the editor holds."""

    uri: str
    document: EditableText
    _lines: LineIndex | None = None
    _drift: tuple[BundleView, Drift] | None = field(default=None, repr=False)

    @property
    def text(self) -> str:
        """The editor's text (joined from its lines only when a request needs it)."""
        return self.document.text

    def edited(self) -> None:
        """The document changed: what was derived from its text is computed again on demand."""
        self._lines = None
        self._drift = None

    def lines(self, encoding: str) -> LineIndex:
        """Line index of the editor's text."""
        if self._lines is None or self._lines.encoding != encoding:
            self._lines = LineIndex(self.text, encoding)
        return self._lines

    def drift(self, view: BundleView, path: str) -> Drift:
        """How the editor's text differs from this bundle's text of the document."""
        if self._drift is None or self._drift[0] is not view:
            self._drift = (view, Drift(view.bundle.text(path), self.text))
        return self._drift[1]


@dataclass(frozen=True)
class OffLoop:
    """A handler's answer that is still to be finished by ``finish()`` on a worker thread
    (it reads files that are not the bundle's: see ``lsp/server.py`` ``answer``)."""

    finish: Callable[[], object]


def uri_to_path(uri: str) -> Path | None:
    """The resolved file system path of a ``file:`` URI, or None."""
    try:
        fs_path = to_fs_path(uri)
    except Exception:  # noqa: BLE001 - a malformed URI is just "not a bundle document"
        return None
    if not fs_path or not uri.startswith("file:"):
        return None
    try:
        return Path(fs_path).resolve()
    except (OSError, RuntimeError, ValueError):
        return None


class Session:
    """State shared by the features. ``encoding`` is the negotiated position encoding."""

    def __init__(self):
        self.registry = Registry()
        self.open: dict[Path, OpenDocument] = {}
        self.encoding = "utf-16"
        self.link_tooltips = False
        # (bundle root, document path) -> its URI / file path: answers such as references
        # convert thousands of places, and building URIs and paths dominated their time.
        self._uris: dict[tuple[Path, str], str] = {}
        self._paths: dict[tuple[Path, str], Path] = {}
        # Locations of places in documents the editor shows unchanged, per loaded bundle.
        self._locations: weakref.WeakKeyDictionary[BundleView, dict] = weakref.WeakKeyDictionary()

    def warm_lines(self, view: BundleView) -> None:
        """Index the lines of every document of a freshly loaded bundle (run off the event
        loop, giving way to requests): a few milliseconds each for the large ones, which a
        first request into a document, or an answer with places in many, paid otherwise."""
        from tvm_explorer.navigation.background import warm_each
        from tvm_explorer.navigation.irsymbols import warm_order

        warm_each(
            view,
            warm_order(view),
            lambda path: view.line_index(path, self.encoding),
            lambda: self.registry.is_current(view),
        )

    # -- documents ---------------------------------------------------------------------
    def locate(self, uri: str) -> tuple[BundleView, str] | None:
        """The bundle and bundle-relative path of a URI, if it is a bundle document."""
        path = uri_to_path(uri)
        return self.registry.find(path) if path else None

    def bundle_view(self, uri: str) -> BundleView | None:
        """The loaded bundle a URI names: its directory, or any of its documents."""
        path = uri_to_path(uri)
        if path is None:
            return None
        if path in self.registry.bundles:
            return self.registry.bundles[path]
        found = self.registry.find(path)
        return found[0] if found else None

    def lines(self, view: BundleView, path: str) -> tuple[LineIndex, Drift | None]:
        """Line index of what the editor shows for a document, and its drift if edited."""
        opened = None
        if self.open:
            key = (view.root, path)
            full = self._paths.get(key)
            if full is None:
                full = self._paths[key] = view.root / path
            opened = self.open.get(full)
        if opened is None:
            return view.line_index(path, self.encoding), None
        drift = opened.drift(view, path)
        if drift.clean:
            return view.line_index(path, self.encoding), None
        return opened.lines(self.encoding), drift

    def query(self, uri: str, position: types.Position) -> Query | None:
        """Resolve a request position; None when there is nothing to answer."""
        found = self.locate(uri)
        if found is None:
            return None
        view, path = found
        lines, drift = self.lines(view, path)
        offset = lines.token_offset(position.line, position.character)
        if offset is None:
            return None
        if drift is None:
            return Query(view, path, offset, keep_all)
        offset = drift.to_original(offset)
        if offset is None:
            return None
        return Query(view, path, offset, lambda r: drift.keeps(r.start, r.end))

    def line_query(self, uri: str, position: types.Position) -> Query | None:
        """``query``, or, on a line's indentation or past its end, the line's first character:
        for requests about what a line is (stage sync, layer places), a cursor anywhere on a
        line means that line (a PyTorch model document indents its node entries)."""
        q = self.query(uri, position)
        if q is not None:
            return q
        found = self.locate(uri)
        if found is None:
            return None
        view, path = found
        lines, _ = self.lines(view, path)
        try:
            text = lines.line_text(position.line)
        except IndexError:
            return None
        first = len(text) - len(text.lstrip())
        if first == len(text):
            return None  # a blank line has no origin
        start = lines.offset(position.line, 0)
        if start is None:
            return None
        column = lines.position(start + first)[1]
        return self.query(uri, types.Position(position.line, column))

    # -- answers -----------------------------------------------------------------------
    @staticmethod
    def uri_of_root(root: Path) -> str:
        """The URI of a bundle directory."""
        return from_fs_path(str(root)) or ""

    def uri(self, view: BundleView, path: str) -> str:
        """The URI of a bundle document."""
        key = (view.root, path)
        got = self._uris.get(key)
        if got is None:
            got = self._uris[key] = from_fs_path(str(view.root / path)) or ""
        return got

    def range(self, view: BundleView, path: str, start: int, end: int) -> types.Range | None:
        """The LSP range of a bundle-text span as the editor shows it (None if edited away)."""
        return self.ranger(view, path)(start, end)

    def ranger(self, view: BundleView, path: str, *, as_saved: bool = False):
        """``range`` for many spans of one document: ``ranger(view, path)(start, end)``.
        ``as_saved``: positions in the document as the bundle has it, whatever the editor shows
        (for answers kept to serve while the document is unedited)."""
        if as_saved:
            lines, drift = view.line_index(path, self.encoding), None
        else:
            lines, drift = self.lines(view, path)
        position = lines.position

        def convert(start: int, end: int) -> types.Range | None:
            if drift is not None:
                shifted = drift.to_current(start, end)
                if shifted is None:
                    return None
                start, end = shifted
            (l0, c0), (l1, c1) = position(start), position(end)
            return types.Range(types.Position(l0, c0), types.Position(l1, c1))

        return convert

    def location(self, view: BundleView, place: Place) -> types.Location | None:
        """The LSP location of a place (None if an edit in the editor removed it)."""
        rng = self.range(view, place.path, place.start, place.end)
        return types.Location(self.uri(view, place.path), rng) if rng else None

    def locations(self, view: BundleView, places: list[Place]) -> list[types.Location]:
        """LSP locations of places, dropping those an edit removed (``location`` for each
        place, with the URI and line index looked up once per document)."""
        out = []
        per_path: dict[str, tuple] = {}
        cache = self._locations.get(view)
        if cache is None:
            cache = self._locations[view] = {}
        encoding = self.encoding
        for place in places:
            got = per_path.get(place.path)
            if got is None:
                got = per_path[place.path] = (self.uri(view, place.path), *self.lines(view, place.path))
            uri, lines, drift = got
            start, end = place.start, place.end
            if drift is None:
                key = (encoding, place.path, start, end)
                loc = cache.get(key)
                if loc is None:
                    if len(cache) >= LOCATIONS_KEPT:
                        cache.clear()
                    (l0, c0), (l1, c1) = lines.position(start), lines.position(end)
                    loc = cache[key] = types.Location(uri, types.Range(types.Position(l0, c0), types.Position(l1, c1)))
                out.append(loc)
                continue
            shifted = drift.to_current(start, end)
            if shifted is None:
                continue
            start, end = shifted
            (l0, c0), (l1, c1) = lines.position(start), lines.position(end)
            out.append(types.Location(uri, types.Range(types.Position(l0, c0), types.Position(l1, c1))))
        return out


class Feature:
    """A feature of the server (``features/``): its handlers answer from the shared ``Session``."""

    def __init__(self, session: Session):
        self.session = session

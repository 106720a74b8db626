"""IR-native symbols: definitions, reads and writes of names inside one bundle document.

``symbol_table(view, path)`` gives a document's symbols (``document.py``: outlined once,
lexed a top-level function at a time) and keeps them with the loaded bundle; ``navigate.py``
answers definition, highlights and references.
"""

from __future__ import annotations

import logging
import threading
import time
import weakref
from collections import OrderedDict

from tvm_explorer.navigation.background import REQUESTS, warm_each
from tvm_explorer.navigation.irsymbols.document import CLIKE, SCRIPT, DocumentSymbols
from tvm_explorer.navigation.view import BundleView

_TABLES: weakref.WeakKeyDictionary[BundleView, OrderedDict[str, DocumentSymbols | None]] = weakref.WeakKeyDictionary()
_LOCK = threading.Lock()
logger = logging.getLogger(__name__)

OCCURRENCES_KEPT = 250_000
"""Most occurrences the documents of one bundle keep lexed together (the documents used
last; about 250 bytes each, so at most ~60 MiB): a large bundle's every table took several
times its size, and a function's stretch is lexed again in milliseconds."""


def _size(symbols: DocumentSymbols | None) -> int:
    return len(symbols) if symbols is not None else 0


def _build(view: BundleView, path: str) -> DocumentSymbols | None:
    doc = view.bundle.document(path)
    if doc is None:
        return None
    if doc.stage in ("relax", "tir"):
        language = SCRIPT
    elif doc.stage == "code" and (path.endswith((".c", ".cu", ".cc", ".h")) or doc.language in ("c", "cuda")):
        language = CLIKE
    else:
        return None
    bundle = view.bundle  # not the view: the cache is keyed weakly by it
    return DocumentSymbols(lambda: bundle.text(path), language)


def symbol_table(view: BundleView, path: str) -> DocumentSymbols | None:
    """The symbols of a Relax, TIR, C or CUDA document (None for other documents)."""
    with _LOCK:
        per_view = _TABLES.setdefault(view, OrderedDict())
        if path in per_view:
            per_view.move_to_end(path)
            _bound(per_view)  # documents grow as their stretches are lexed
            return per_view[path]
    started = time.perf_counter()
    symbols = _build(view, path)
    logger.debug(
        "symbol outline of %s in %.0f ms (%s)",
        path,
        1000 * (time.perf_counter() - started),
        threading.current_thread().name,
    )
    with _LOCK:
        per_view[path] = symbols
        _bound(per_view)
    return symbols


def _bound(per_view: OrderedDict[str, DocumentSymbols | None]) -> None:
    """Forget the documents used least recently while those kept hold too many occurrences."""
    total = sum(_size(t) for t in per_view.values())
    while total > OCCURRENCES_KEPT and len(per_view) > 1:
        _, dropped = per_view.popitem(last=False)
        total -= _size(dropped)


def warm_order(view: BundleView) -> list[str]:
    """Documents in the order a warm-up builds them: generated code, then each stage's last
    document, then the rest from the end of the pipeline (what editors open most first)."""
    docs = view.bundle.documents
    last = {d.stage: d.path for d in docs}
    first = [d.path for d in docs if d.stage == "code"] + [last[s] for s in ("tir", "relax") if s in last]
    return first + [d.path for d in reversed(docs) if d.path not in first]


def outline_code(view: BundleView, current=lambda: True) -> None:
    """Outline the generated C and CUDA documents (their brace scans are the slowest
    outlines: ~30 ms for 3.7 MB of CUDA), the first warm-up after a load: users start there.
    Gives way to requests, and stops once ``current()`` says the bundle was replaced."""
    code = [doc.path for doc in view.bundle.documents if doc.stage == "code"]
    warm_each(view, code, lambda path: symbol_table(view, path), current)


def warm_outlines(view: BundleView, current=lambda: True) -> None:
    """Outline every document (its functions; milliseconds each) ahead of the first request
    after a bundle loads, most likely used documents first; stops as soon as ``current()``
    says the bundle was replaced meanwhile. Runs before the other warm-ups: a request landing
    in a document nobody asked about then finds at least its outline."""
    warm_each(view, warm_order(view), lambda path: symbol_table(view, path), current)


def warm(view: BundleView, current=lambda: True) -> None:
    """Outline every document and prepare the structure of every function
    (``warm_outlines``, then ``warm_structures``)."""
    warm_outlines(view, current)
    warm_structures(view, current)


def warm_structures(view: BundleView, current=lambda: True) -> None:
    """Prepare the structure of every function of every document (outlining those not
    outlined yet), most likely used documents first, ahead of the first requests; stops as
    soon as ``current()`` says the bundle was replaced meanwhile. A name is then looked up in
    its function when asked for (milliseconds)."""

    def prepare(path: str) -> None:
        symbols = symbol_table(view, path)
        if symbols is not None:
            symbols.prepare(lambda: not current())

    warm_each(view, warm_order(view), prepare, current)


def warm_document(view: BundleView, path: str, current=lambda: True) -> None:
    """Prepare a document the editor opened ahead of its requests, if ``warm`` has not yet
    (or it was forgotten since): the structure of each function, so that a first question
    about a name lexes only where it occurs; requests answered meanwhile go first, and it
    stops when ``current()`` says the bundle was replaced."""
    with REQUESTS.yielding():
        symbols = symbol_table(view, path)
        if symbols is not None:
            symbols.prepare(lambda: not current())

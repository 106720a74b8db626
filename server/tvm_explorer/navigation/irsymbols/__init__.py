"""IR-native symbols: definitions, reads and writes of names inside one bundle document.

``symbol_table(view, path)`` builds a document's table once (lexing its text) and keeps it
with the loaded bundle; ``navigate.py`` answers definition, highlights and references.
"""

from __future__ import annotations

import logging
import threading
import time
import weakref
from collections import OrderedDict

from ..background import REQUESTS
from ..view import BundleView
from .clike import clike_symbols
from .table import SymbolTable
from .tvmscript import script_symbols

_TABLES: weakref.WeakKeyDictionary[BundleView, OrderedDict[str, SymbolTable | None]] = weakref.WeakKeyDictionary()
_LOCK = threading.Lock()
logger = logging.getLogger(__name__)

OCCURRENCES_KEPT = 1_000_000
"""Most occurrences the tables of one bundle keep together (the tables used last; about
100 bytes each): a large bundle's every table took several times the bundle's size."""


def _size(table: SymbolTable | None) -> int:
    return len(table) if table is not None else 0


def _build(view: BundleView, path: str) -> SymbolTable | None:
    doc = view.bundle.document(path)
    if doc is None:
        return None
    if doc.stage in ("relax", "tir"):
        return script_symbols(view.bundle.text(path))
    if doc.stage == "code" and (path.endswith((".c", ".cu", ".cc", ".h")) or doc.language in ("c", "cuda")):
        return clike_symbols(view.bundle.text(path))
    return None


def symbol_table(view: BundleView, path: str) -> SymbolTable | None:
    """The symbols of a Relax, TIR, C or CUDA document (None for other documents)."""
    with _LOCK:
        per_view = _TABLES.setdefault(view, OrderedDict())
        if path in per_view:
            per_view.move_to_end(path)
            return per_view[path]
    started = time.perf_counter()
    table = _build(view, path)
    logger.debug("symbol table of %s: %d occurrences in %.0f ms (%s)", path, _size(table),
                1000 * (time.perf_counter() - started), threading.current_thread().name)
    with _LOCK:
        per_view[path] = table
        total = sum(_size(t) for t in per_view.values())
        while total > OCCURRENCES_KEPT and len(per_view) > 1:
            _, dropped = per_view.popitem(last=False)
            total -= _size(dropped)
    return table


def warm_order(view: BundleView) -> list[str]:
    """Documents in the order a warm-up builds them: generated code, then each stage's last
    document, then the rest from the end of the pipeline (what editors open most first)."""
    docs = view.bundle.documents
    last = {d.stage: d.path for d in docs}
    first = [d.path for d in docs if d.stage == "code"] + [last[s] for s in ("tir", "relax") if s in last]
    return first + [d.path for d in reversed(docs) if d.path not in first]


def warm(view: BundleView, current=lambda: True) -> None:
    """Build tables ahead of the first request (after a bundle loads), most likely used
    documents first, as many as ``OCCURRENCES_KEPT`` allows; stops as soon as ``current()``
    says the bundle was replaced meanwhile."""
    kept = 0
    with REQUESTS.yielding():  # requests answered meanwhile go first (see ``background``)
        for path in warm_order(view):
            REQUESTS.checkpoint()
            if not current():
                return
            kept += _size(symbol_table(view, path))
            if kept >= OCCURRENCES_KEPT:
                return

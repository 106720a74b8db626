"""IR-native symbols: definitions, reads and writes of names inside one bundle document.

``symbol_table(view, path)`` builds a document's table once (lexing its text) and keeps it
with the loaded bundle; ``navigate.py`` answers definition, highlights and references.
"""

from __future__ import annotations

import threading
import weakref

from ..view import BundleView
from .clike import clike_symbols
from .table import SymbolTable
from .tvmscript import script_symbols

_TABLES: weakref.WeakKeyDictionary[BundleView, dict[str, SymbolTable | None]] = weakref.WeakKeyDictionary()
_LOCK = threading.Lock()


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
        per_view = _TABLES.setdefault(view, {})
        if path in per_view:
            return per_view[path]
    table = _build(view, path)
    with _LOCK:
        per_view[path] = table
    return table


def warm(view: BundleView, current=lambda: True) -> None:
    """Build every document's table ahead of the first request (after a bundle loads),
    stopping as soon as ``current()`` says the bundle was replaced meanwhile."""
    for doc in view.bundle.documents:
        if not current():
            return
        symbol_table(view, doc.path)

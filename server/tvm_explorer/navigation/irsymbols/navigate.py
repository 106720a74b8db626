"""Definition, highlights and references of a name inside one document.

The rule (docs/navigation.md): on a *use* of a name defined in the same document, definition
goes to its definition (and, for a read of something written in the document, to the
statements that write it, producers first); on a definition, a store's target and anywhere
else, the caller answers with the origin layers instead (``None`` here).
"""

from __future__ import annotations

from dataclasses import dataclass

from tvm_explorer.navigation.irsymbols import symbol_table
from tvm_explorer.navigation.irsymbols.lexer import word_char
from tvm_explorer.navigation.irsymbols.table import DEF, READ, WRITE, Occurrence
from tvm_explorer.navigation.view import BundleView, Keep, Place, keep_all


@dataclass(frozen=True)
class Highlight:
    """A name's occurrence: ``[start, end)`` and whether it is read or written."""

    start: int
    end: int
    write: bool


def _on_word(text: str, offset: int) -> bool:
    """Whether a name can contain ``offset`` (a character of a word at or just before it)."""
    return any(0 <= i < len(text) and word_char(text[i]) for i in (offset, offset - 1))


def _use_at(view: BundleView, path: str, offset: int):
    # Off any name (punctuation, numbers' neighbours, blanks) the answer is the origin
    # layers: no need to build the document's table (seconds on a large one) to know it.
    if view.bundle.document(path) is None or not _on_word(view.bundle.text(path), offset):
        return None, None
    table = symbol_table(view, path)
    if table is None:
        return None, None
    occ = table.at(offset)
    return table, occ


def _landing(path: str, occ: Occurrence, kind: str) -> Place:
    if occ.role == DEF and occ.kind in ("param", "loop", "function", "declaration"):
        return Place(path, occ.start, occ.end, kind, occ.name)
    return Place(path, occ.stmt_start, occ.stmt_end, kind, occ.name)


def symbol_definition(view: BundleView, path: str, offset: int, keep: Keep = keep_all) -> list[Place] | None:
    """Where the name used at ``offset`` is defined (producers first for a read of something
    written here), or None when ``offset`` is not on a use (a definition, a store target,
    anything else): then the answer is the origin layers."""
    table, occ = _use_at(view, path, offset)
    if occ is None or occ.role != READ:
        return None
    definition = table.definition(occ)
    if definition.start == occ.start:
        return None
    # A store names its buffer first; a T.writes(...) annotation is a write but no producer.
    producers = [
        o
        for o in table.occurrences(occ.symbol)
        if o.role == WRITE and o.start == o.stmt_start and not (o.stmt_start <= occ.start < o.stmt_end)
    ]
    earlier = [o for o in producers if o.start < occ.start]
    producers = earlier or producers
    seen: set[tuple[int, int]] = set()
    out = []
    for o in producers:
        if (o.stmt_start, o.stmt_end) not in seen:
            seen.add((o.stmt_start, o.stmt_end))
            out.append(Place(path, o.stmt_start, o.stmt_end, "write", o.name))
    out.append(_landing(path, definition, "definition"))
    return [p for p in out if _kept(p, keep)]


def _kept(place: Place, keep: Keep) -> bool:
    from tvm_explorer.bundle.index import Range

    return keep(Range(place.start, place.end, 0, place.kind, place.key))


def highlights(view: BundleView, path: str, offset: int) -> list[Highlight]:
    """Every occurrence of the name at ``offset`` in its document (definition and writes as
    writes), or [] when ``offset`` is not on a known name."""
    table, occ = _use_at(view, path, offset)
    if occ is None:
        return []
    return [Highlight(o.start, o.end, o.role != READ) for o in table.occurrences(occ.symbol)]


def symbol_references(view: BundleView, path: str, offset: int, include_declaration: bool) -> list[Place] | None:
    """The uses of the name at ``offset`` in its document (its definition first when
    ``include_declaration``), or None when ``offset`` is not on a name."""
    table, occ = _use_at(view, path, offset)
    if occ is None:
        return None
    out = []
    for o in table.occurrences(occ.symbol):
        if o.role == DEF and not include_declaration:
            continue
        out.append(Place(path, o.start, o.end, o.role, o.name))
    return out


def definition_offset(view: BundleView, path: str, name: str) -> int | None:
    """Offset of the ``def`` line of module-level function ``name`` in a document (its first
    character, the ``def`` keyword), or None."""
    table = symbol_table(view, path)
    found = table.function(name) if table is not None else None
    return found.stmt_start if found is not None else None

"""A document's symbols, looked up one name in one top-level function at a time.

Lexing a whole 4 MB TIR or CUDA document took a second and hundreds of megabytes, while a
question is about one name in one function. A name is either local to the function it is in
or a module-level definition (a function, a C declaration), so a document is cut into
*stretches* that begin outside any function: TVMScript at each module-level ``def`` line, C
and CUDA after each line closing a top-level brace. An *outline* made once per document
with regular expressions (milliseconds for 4 MB) holds the stretches and every module-level
definition. A question about a name looks at that name in its stretch only (``names.py``:
the stretch's structure, the lines where the name may be defined or written lexed), with the
module's definitions given up front, so its uses resolve exactly as in the whole document;
a stretch is lexed whole only for ``between`` and for TVMScript's preamble.

Answers are the same as a whole-document table's (tests/lsp/test_ir_symbol_stretches.py
compares them on real bundles and crafted texts). If a stretch shows the document was cut
where it should not be (a statement or block still open at its end, module-level definitions
other than the outline's), the document is lexed whole from then on.
"""

from __future__ import annotations

import logging
import re
import threading
from bisect import bisect_right
from collections import OrderedDict
from collections.abc import Callable

from tvm_explorer.navigation.background import REQUESTS
from tvm_explorer.navigation.irsymbols.clike import clike_module_definitions, clike_symbols
from tvm_explorer.navigation.irsymbols.clike_names import ClikeStretch
from tvm_explorer.navigation.irsymbols.lexer import clike_braces, script_line_end, word_char, word_starts
from tvm_explorer.navigation.irsymbols.names import StructureMismatch
from tvm_explorer.navigation.irsymbols.script_names import ScriptStretch
from tvm_explorer.navigation.irsymbols.table import DEF, Builder, Occurrence, SymbolTable
from tvm_explorer.navigation.irsymbols.tvmscript import script_symbols

logger = logging.getLogger(__name__)

SCRIPT, CLIKE = "script", "clike"
STRETCH_OCCURRENCES_KEPT = 150_000
"""Most occurrences one document keeps in lexed stretches (the ones used last)."""

_WORD_END = re.compile(r"\w*")
_NAME = re.compile(r"[A-Za-z_]\w*")
# ``def NAME`` at most four blanks into its line; the pattern starts with its literal so the
# regex engine scans for it fast (a ``^`` first was tried at every character: 36 ms for 4 MB).
_DEF = re.compile(r"(def)[ \t\r\f\v]+([A-Za-z_]\w*)")
_INDENT = re.compile(r"[ \t\r\f\v]{0,4}")
_LEXERS = {SCRIPT: script_symbols, CLIKE: clike_symbols}
_EMPTY = SymbolTable({}, [])


def _script_outline(text: str) -> tuple[list[int], list[Occurrence]]:
    """Stretch starts (0, then each module-level ``def`` line) and module-level definitions."""
    starts, defs = [0], []
    for n, m in enumerate(_DEF.finditer(text)):
        if not n & 0x3F:
            REQUESTS.checkpoint()  # on a warm-up: requests go first (see ``background``)
        line_start = text.rfind("\n", 0, m.start()) + 1
        indent = _INDENT.match(text, line_start)
        assert indent is not None  # ``[…]{0,4}`` matches the empty string too
        if indent.end() != m.start():
            continue  # not at the start of its line, or indented deeper: not module-level
        if line_start > 0:
            starts.append(line_start)
        name_start, name_end = m.span(2)
        defs.append(
            Occurrence(
                name_start,
                name_end,
                m.group(2),
                DEF,
                name_start,
                m.start(),
                script_line_end(text, m.start()),
                "function",
            )
        )
    # Assignments before the first function are module-level too (none in what TVM prints).
    preamble = Builder()
    script_symbols(text, 0, starts[1] if len(starts) > 1 else len(text), preamble)
    defs.extend(d for d in preamble.defs.values() if d.start not in {x.start for x in defs})
    return starts, defs


def _clike_outline(text: str) -> tuple[list[int], list[Occurrence]]:
    """Stretch starts (0, then the line after each brace closing a top-level block) and the
    functions and declarations outside any brace."""
    starts, defs = [0], []
    depth, outside, pending = 0, 0, None  # ``outside``: where the current depth-0 text began
    for n, (start, end, brace) in enumerate(clike_braces(text)):
        if not n & 0x3FF:
            REQUESTS.checkpoint()  # on a warm-up: requests go first (see ``background``)
        if pending is not None and start < pending < end:
            pending = None  # a comment or string across the line break: no cut there
        if brace == "{":
            if depth == 0:
                if pending is not None and pending <= start:
                    starts.append(pending)
                pending = None
                defs.extend(clike_module_definitions(text, outside, end))
            depth += 1
        elif brace == "}":
            depth -= 1
            if depth <= 0:
                depth, outside = 0, end
                line_end = text.find("\n", end)
                pending = len(text) if line_end < 0 else line_end + 1
    if depth == 0:
        defs.extend(clike_module_definitions(text, outside, len(text)))
        if pending is not None and pending < len(text):
            starts.append(pending)
    return starts, defs


class DocumentSymbols:
    """The symbols of one Relax, TIR, C or CUDA document: the answers of a whole-document
    ``SymbolTable``, from stretches lexed on demand."""

    def __init__(self, text_of: Callable[[], str], language: str):
        self._text_of = text_of
        self._language = language
        text = text_of()
        self._length = len(text)
        starts, module = (_script_outline if language == SCRIPT else _clike_outline)(text)
        self._starts = starts
        self._module = sorted(module, key=lambda d: d.start)
        self._module_starts = {d.start: d for d in module}
        self._by_name: dict[str, list[Occurrence]] = {}
        for d in self._module:
            self._by_name.setdefault(d.name, []).append(d)
        self._stretches: OrderedDict[int, SymbolTable] = OrderedDict()
        # Each function's structure (statements, logical lines), one table per (stretch, name)
        self._structures: dict[int, ClikeStretch | ScriptStretch] = {}
        self._named: OrderedDict[tuple[int, str], SymbolTable] = OrderedDict()
        self._held = 0
        self._whole: SymbolTable | None = None
        self._lock = threading.Lock()

    # -- questions -------------------------------------------------------------------------

    def at(self, offset: int) -> Occurrence | None:
        """The occurrence containing ``offset`` (a cursor right after a name counts)."""
        return self._table_at(offset, self._name_at(offset)).at(offset)

    def definition(self, occ: Occurrence) -> Occurrence:
        """The definition ``occ`` resolves to."""
        return self._table_at(occ.start, occ.name).defs[occ.symbol]

    def occurrences(self, symbol: int) -> list[Occurrence]:
        """Every occurrence of ``symbol`` (its definition included), in document order."""
        if self._whole is not None:
            return self._whole.of_symbol(symbol)
        if symbol not in self._module_starts:
            return self._table_at(symbol, self._name_at(symbol)).of_symbol(symbol)
        name = self._module_starts[symbol].name
        out: list[Occurrence] = []
        for i in self._stretches_naming(name):
            out.extend(self._table(i, name).of_symbol(symbol))
            if self._whole is not None:  # a stretch was cut wrong: answer from the whole
                return self._whole.of_symbol(symbol)
        return out

    def between(self, start: int, end: int) -> list[Occurrence]:
        """The occurrences starting in ``[start, end)``, in document order."""
        if self._whole is not None:
            return self._whole.between(start, end)
        first = bisect_right(self._starts, start) - 1
        last = bisect_right(self._starts, max(start, end - 1)) - 1
        out: list[Occurrence] = []
        for i in range(max(first, 0), last + 1):
            out.extend(self._stretch(i).between(start, end))
        return self._whole.between(start, end) if self._whole is not None else out

    def function(self, name: str) -> Occurrence | None:
        """The first module-level function (with a body) named ``name``, or None."""
        return next((d for d in self._by_name.get(name, ()) if d.kind == "function"), None)

    def prepare(self, stop=lambda: False) -> None:
        """What every document gets ahead of its first question (milliseconds): the structure
        of each function (statements of C and CUDA, logical lines of TVMScript); ``stop()`` is
        asked between functions, after the warm-up's checkpoint."""
        for i in range(len(self._starts)):
            REQUESTS.checkpoint()
            if stop() or self._whole is not None:
                return
            if self._asked_by_name(i):
                try:
                    self._structure(i)
                except StructureMismatch as e:
                    self._fall_back(self._starts[i], str(e))

    def __len__(self) -> int:
        """Occurrences held (the lexed stretches')."""
        return len(self._whole) if self._whole is not None else self._held

    # -- stretches -------------------------------------------------------------------------

    def _stretches_naming(self, name: str) -> list[int]:
        """The stretches whose text has ``name`` as a word (where its uses can be)."""
        text = self._text_of()
        found: list[int] = []
        for at in word_starts(text, name):
            i = bisect_right(self._starts, at) - 1
            if not found or found[-1] != i:
                found.append(i)
        return found

    def _name_at(self, offset: int) -> str | None:
        """The word touching ``offset`` if it reads as a name, "" if there is none, None for a
        word only lexing can tell about."""
        text = self._text_of()
        start = offset
        while start > 0 and word_char(text[start - 1]):
            start -= 1
        word_end = _WORD_END.match(text, offset)
        assert word_end is not None  # ``\w*`` matches the empty string too
        word = text[start : word_end.end()]
        if not word or word[0].isdigit():
            return ""
        return word if _NAME.fullmatch(word) else None

    def _asked_by_name(self, i: int) -> bool:
        """Whether stretch ``i`` is asked one name at a time (every C stretch; TVMScript ones
        beginning at a module-level ``def``, not the module's preamble)."""
        return self._language == CLIKE or i > 0

    def _table_at(self, offset: int, name: str | None = None) -> SymbolTable:
        """The table answering at ``offset``: of ``name`` alone when given (the stretch's whole
        table for TVMScript's preamble), else of the stretch."""
        if self._whole is not None:
            return self._whole
        table = self._table(max(bisect_right(self._starts, offset) - 1, 0), name)
        return self._whole if self._whole is not None else table

    def _table(self, i: int, name: str | None = None) -> SymbolTable:
        if name is None or not self._asked_by_name(i):
            return self._stretch(i)
        if not name:
            return _EMPTY
        with self._lock:
            table = self._named.get((i, name))
            if table is not None:
                self._named.move_to_end((i, name))
                return table
        try:
            table = self._structure(i).table(self._text_of(), name)
        except StructureMismatch as e:
            return self._fall_back(self._starts[i], str(e))
        self._keep(self._named, (i, name), table)
        return table

    def _structure(self, i: int) -> ClikeStretch | ScriptStretch:
        structure = self._structures.get(i)
        if structure is None:
            lo, hi = self._span(i)
            kind = ClikeStretch if self._language == CLIKE else ScriptStretch
            structure = kind(self._text_of(), lo, hi, self._module)
            if structure.open_at_end:
                raise StructureMismatch("a block is still open at its end")
            self._structures[i] = structure
        return structure

    def _span(self, i: int) -> tuple[int, int]:
        return self._starts[i], self._starts[i + 1] if i + 1 < len(self._starts) else self._length

    def _keep(self, cache: OrderedDict, key, table: SymbolTable) -> None:
        """Hold ``table`` under ``key``, forgetting the tables used least recently beyond
        ``STRETCH_OCCURRENCES_KEPT`` occurrences."""
        with self._lock:
            if key in cache:
                return
            cache[key] = table
            self._held += len(table)
            for older in (self._named, self._stretches):
                while self._held > STRETCH_OCCURRENCES_KEPT and len(older) > (older is cache):
                    _, dropped = older.popitem(last=False)
                    self._held -= len(dropped)

    def _stretch(self, i: int) -> SymbolTable:
        with self._lock:
            table = self._stretches.get(i)
            if table is not None:
                self._stretches.move_to_end(i)
                return table
        lo, hi = self._span(i)
        inside = [d for d in self._module if lo <= d.start < hi]
        builder = Builder(self._module, lo, hi)
        table = _LEXERS[self._language](self._text_of(), lo, hi, builder)
        if builder.open_at_end or sorted(builder.module_found) != [d.start for d in inside]:
            return self._fall_back(lo, "cut inside a statement or defining other names")
        self._keep(self._stretches, i, table)
        return table

    def _fall_back(self, lo: int, why: str) -> SymbolTable:
        """Answer from the whole document's table from now on; returns that table."""
        logger.warning(
            "symbols: the stretch at offset %d does not match the document's outline "
            "(%s); lexing the whole document instead",
            lo,
            why,
        )
        whole = _LEXERS[self._language](self._text_of())
        with self._lock:
            self._whole = whole
            self._stretches.clear()
            self._named.clear()
            self._structures.clear()
            self._held = 0
        return whole

"""Symbols of a TVMScript document (Relax or TIR, as TVM prints them).

Definitions: ``def NAME`` at class level (module scope), a function's parameters, a
statement's assigned names (``lv3 = …``, ``lv: R.Tensor(…) = …``, ``pad_temp =
T.sblock_alloc_buffer(…)``, ``v_i0, v_i1 = T.axis.remap(…)``), ``for`` variables and
``with … as NAME``. Writes: the buffer stored to (``X[…] = …``) and the buffers named in
``T.writes(…)``. Everything else naming a definition is a read; ``cls.X`` and a plain
``X(…)`` name the module's function ``X``; attributes (``T.grid``) and keyword arguments
are not names.
"""

from __future__ import annotations

from tvm_explorer.navigation.irsymbols.lexer import Token, matching, script_tokens
from tvm_explorer.navigation.irsymbols.table import READ, WRITE, Builder, SymbolTable


def _lines(tokens: list[Token], b: Builder) -> list[list[Token]]:
    """Logical lines: a line break inside brackets does not end a statement (one left open
    at the end is noted in ``b.open_at_end``)."""
    lines: list[list[Token]] = []
    current: list[Token] = []
    depth = 0
    for tok in tokens:
        if tok.kind == "nl":
            if depth <= 0 and current:
                lines.append(current)
                current, depth = [], 0
            continue
        if tok.text in "([{":
            depth += 1
        elif tok.text in ")]}":
            depth -= 1
        current.append(tok)
    if current:
        lines.append(current)
        b.open_at_end = depth > 0
    return lines


def _assigned(line: list[Token]) -> tuple[list[Token], bool] | None:
    """The names a statement assigns (``a, b = …`` / ``a: T = …``), and whether it is a
    store (``X[…] = …``: then the single name is the buffer written). None otherwise."""
    names: list[Token] = []
    i = 0
    while i < len(line) and line[i].kind == "name":
        names.append(line[i])
        if i + 1 < len(line) and line[i + 1].text == ",":
            i += 2
            continue
        break
    if not names:
        return None
    nxt = line[i + 1].text if i + 1 < len(line) else ""
    if nxt == "=":
        return names, False
    if nxt == ":" and len(names) == 1:
        return names, False
    if nxt == "[" and len(names) == 1:
        j = matching(line, i + 1)  # the last token when the bracket is not closed: no store
        if j + 1 < len(line) and line[j + 1].text in ("=", "+=", "-=", "*=", "/="):
            return names, True
    return None


def script_symbols(text: str, start: int = 0, end: int | None = None, builder: Builder | None = None) -> SymbolTable:
    """The symbol table of a Relax or TIR document, or of its lines ``[start, end)`` (``start``
    at a line start, outside any function or at a module-level ``def``) into ``builder``."""
    b = builder or Builder()
    scope = ""
    for line in _lines(script_tokens(text, start, end), b):
        scope = script_statement(b, text, line, scope)
    return b.build()


def script_statement(b: Builder, text: str, line: list[Token], scope: str) -> str:
    """Define and use into ``b`` the names of one logical line (its tokens, line breaks
    left out) inside function ``scope`` ("" at module level); the scope after it (a
    module-level ``def`` begins its function's)."""
    head = line[0]
    stmt_start, stmt_end = head.start, line[-1].end
    indent = head.start - (text.rfind("\n", 0, head.start) + 1)
    defined: set[int] = set()
    written: set[int] = set()
    if head.text == "def" and len(line) > 1 and line[1].kind == "name":
        name = line[1]
        if indent <= 4:
            scope = name.text
            b.define("", name.start, name.end, name.text, "function", stmt_start, stmt_end)
        else:
            b.define(scope, name.start, name.end, name.text, "function", stmt_start, stmt_end)
        defined.add(1)
        depth = 0
        for i in range(2, len(line)):
            t = line[i].text
            if t in "([{":
                depth += 1
            elif t in ")]}":
                depth -= 1
            elif (
                depth == 1
                and line[i].kind == "name"
                and i + 1 < len(line)
                and line[i + 1].text == ":"
                and line[i - 1].text in "(,"
            ):
                b.define(scope, line[i].start, line[i].end, line[i].text, "param", line[i].start, line[i].end)
                defined.add(i)
    elif head.text == "for":
        for i in range(1, len(line)):
            if line[i].text == "in":
                break
            if line[i].kind == "name":
                b.define(scope, line[i].start, line[i].end, line[i].text, "loop", line[i].start, line[i].end)
                defined.add(i)
    elif head.text == "with":
        for i in range(1, len(line) - 1):
            if line[i].text == "as" and line[i + 1].kind == "name":
                b.define(scope, line[i + 1].start, line[i + 1].end, line[i + 1].text, "binding", stmt_start, stmt_end)
                defined.add(i + 1)
    else:
        found = _assigned(line)
        if found:
            names, store = found
            if store:
                written.add(0)
            else:
                for tok in names:
                    b.define(scope, tok.start, tok.end, tok.text, "binding", stmt_start, stmt_end)
                defined.update(i for i, t in enumerate(line) if t in names)
    _uses(b, scope, line, defined, written, stmt_start, stmt_end)
    return scope


def _uses(
    b: Builder, scope: str, line: list[Token], defined: set[int], written: set[int], stmt_start: int, stmt_end: int
) -> None:
    writes_until = -1  # inside the parentheses of T.writes(...)
    depth = 0
    for i, tok in enumerate(line):
        t = tok.text
        if t in "([{":
            depth += 1
        elif t in ")]}":
            depth -= 1
            if depth < writes_until:
                writes_until = -1
        if tok.kind != "name" or i in defined:
            continue
        prev = line[i - 1].text if i else ""
        nxt = line[i + 1].text if i + 1 < len(line) else ""
        if prev == ".":
            if t == "writes" and i >= 2 and line[i - 2].text == "T" and nxt == "(":
                writes_until = depth + 1
            if not (i >= 2 and line[i - 2].text == "cls"):
                continue
            b.use("", tok.start, tok.end, t, READ, stmt_start, stmt_end)
            continue
        if nxt == "=" and depth > 0:
            continue  # a keyword argument
        role = WRITE if i in written or (writes_until > 0 and depth >= writes_until) else READ
        b.use(scope, tok.start, tok.end, t, role, stmt_start, stmt_end)

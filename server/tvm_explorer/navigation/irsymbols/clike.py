"""Symbols of generated C and CUDA, as far as a lexer can tell.

Definitions: a function or kernel with a body (its prototypes are declarations), its
parameters, and locals declared as ``TYPE NAME = …`` / ``TYPE NAME;`` / ``TYPE NAME[N];``
(``for (int32_t i = 0; …)`` included). Writes: ``NAME[…] = …`` and ``NAME = …`` (and the
compound assignments). Member names after ``.`` or ``->`` are not names.
"""

from __future__ import annotations

from tvm_explorer.navigation.irsymbols.lexer import Token, clike_tokens, matching
from tvm_explorer.navigation.irsymbols.table import READ, WRITE, Builder, Occurrence, SymbolTable

_NOT_TYPES = {
    "return",
    "else",
    "if",
    "while",
    "for",
    "do",
    "goto",
    "case",
    "switch",
    "break",
    "continue",
    "sizeof",
    "default",
}
_ASSIGN = {"=", "+=", "-=", "*=", "/=", "%=", "&=", "|=", "^=", "<<=", ">>="}
_QUALIFIED_CALL = {"alignas", "__launch_bounds__", "__align__", "__attribute__"}


def _is_type_prefix(tokens: list[Token], lo: int, hi: int) -> bool:
    """True if ``tokens[lo:hi]`` reads like a declaration's type (``const float*``,
    ``__shared__ alignas(64) float``)."""
    words = 0
    i = lo
    while i < hi:
        tok = tokens[i]
        if tok.kind == "name":
            if tok.text in _NOT_TYPES:
                return False
            if tok.text in _QUALIFIED_CALL and i + 1 < hi and tokens[i + 1].text == "(":
                i = matching(tokens, i + 1) + 1
                continue
            words += 1
        elif tok.text not in ("*", "&"):
            return False
        i += 1
    return words > 0


def _statement_end(text: str, start: int) -> int:
    end = text.find("\n", start)
    return len(text) if end < 0 else end


class _Nesting:
    """Where a walk over the tokens is: brace depth, the function it is in (``scope``) and the
    index of the current statement's first token (``stmt``)."""

    def __init__(self, depth: int = 0, scope: str = ""):
        self.depth, self.scope, self.stmt = depth, scope, 0

    def punctuation(self, t: str, i: int) -> bool:
        """Follow token ``t`` at index ``i`` if it opens or closes a block or a statement."""
        if t == "{":
            self.depth += 1
        elif t == "}":
            self.depth -= 1
            if self.depth <= 0:
                self.depth, self.scope = 0, ""
        elif t == ";":
            if self.depth == 0:
                self.scope = ""
        else:
            return False
        self.stmt = i + 1
        return True


def clike_symbols(text: str, start: int = 0, end: int | None = None, builder: Builder | None = None) -> SymbolTable:
    """The symbol table of a C or CUDA document, or of its stretch ``[start, end)`` (both
    outside any brace) into ``builder``."""
    tokens = [t for t in clike_tokens(text, start, end) if t.kind != "nl"]
    b = builder or Builder()
    defined = _definitions(b, tokens, text)
    _uses(b, tokens, text, defined)
    return b.build()


def clike_statement(b: Builder, text: str, start: int, end: int, depth: int, scope: str) -> list[Token]:
    """Define and use into ``b`` the names of one statement, ``text[start:end]`` (from just
    after a ``;``, ``{`` or ``}`` through the next one), ``depth`` braces deep in function
    ``scope`` (as the walk over a whole stretch would); its tokens."""
    tokens = [t for t in clike_tokens(text, start, end) if t.kind != "nl"]
    defined = _definitions(b, tokens, text, depth, scope)
    _uses(b, tokens, text, defined, depth, scope)
    return tokens


def clike_module_definitions(text: str, start: int, end: int) -> list[Occurrence]:
    """The functions and declarations ``text[start:end]`` defines outside any brace (a
    stretch of a document at brace depth 0, ending at most with the ``{`` of a body)."""
    b = Builder()
    _definitions(b, [t for t in clike_tokens(text, start, end) if t.kind != "nl"], text)
    return [d for d in b.defs.values() if d.kind in ("function", "declaration")]


def _definitions(b: Builder, tokens: list[Token], text: str, depth: int = 0, scope: str = "") -> set[int]:
    """Define every function, declaration, parameter and local of ``tokens`` (which begin at
    a statement's start, ``depth`` braces deep inside function ``scope``); the indexes of the
    defining tokens."""
    at = _Nesting(depth, scope)
    defined: set[int] = set()
    n = len(tokens)
    i = 0
    while i < n:
        tok = tokens[i]
        t = tok.text
        if at.punctuation(t, i):
            pass
        elif (
            tok.kind == "name"
            and i + 1 < n
            and tokens[i + 1].text == "("
            and at.depth == 0
            and t not in _QUALIFIED_CALL
        ):
            close = matching(tokens, i + 1)
            after = tokens[close + 1].text if close + 1 < n else ""
            if after in ("{", ";") and _is_type_prefix(tokens, at.stmt, i):
                line_start = text.rfind("\n", 0, tok.start) + 1
                kind = "function" if after == "{" else "declaration"
                b.define("", tok.start, tok.end, t, kind, line_start, _statement_end(text, tok.start))
                defined.add(i)
                if after == "{":
                    at.scope = t
                    _parameters(b, at.scope, tokens, i + 1, close, defined)
        elif tok.kind == "name" and at.depth > 0 and i not in defined:
            nxt = tokens[i + 1].text if i + 1 < n else ""
            first, kind = at.stmt, "local"
            if first < i and tokens[first].text == "for" and first + 1 < i and tokens[first + 1].text == "(":
                first, kind = first + 2, "loop"
            if nxt in ("=", ";", "[") and _is_type_prefix(tokens, first, i):
                b.define(at.scope, tok.start, tok.end, t, kind, tokens[first].start, _statement_end(text, tok.start))
                defined.add(i)
        i += 1
    b.open_at_end = at.depth > 0
    return defined


def _parameters(b: Builder, scope: str, tokens: list[Token], open_: int, close: int, defined: set[int]) -> None:
    group: list[int] = []
    for j in range(open_ + 1, close + 1):
        t = tokens[j].text
        if t in (",", ")") and tokens[j].kind == "op":
            names = [k for k in group if tokens[k].kind == "name"]
            if len(names) >= 2:
                k = names[-1]
                b.define(scope, tokens[k].start, tokens[k].end, tokens[k].text, "param", tokens[k].start, tokens[k].end)
                defined.add(k)
            group = []
        else:
            group.append(j)


def _uses(b: Builder, tokens: list[Token], text: str, defined: set[int], depth: int = 0, scope: str = "") -> None:
    at = _Nesting(depth, scope)
    # A function's body and parameters are its scope; a declaration's parameter names are
    # not uses of anything (they named the definition's parameters, anywhere in the file).
    functions = {
        i: tokens[i].text
        for i in defined
        if i + 1 < len(tokens)
        and tokens[i + 1].text == "("
        and tokens[min(matching(tokens, i + 1) + 1, len(tokens) - 1)].text == "{"
    }
    for i, tok in enumerate(tokens):
        t = tok.text
        at.punctuation(t, i)
        if i in functions and at.depth == 0:
            at.scope = functions[i]
        stmt = at.stmt
        if tok.kind != "name" or i in defined:
            continue
        if i and tokens[i - 1].text in (".", "->"):
            continue
        role = READ
        nxt = tokens[i + 1].text if i + 1 < len(tokens) else ""
        if i == stmt or (i == stmt + 2 and tokens[stmt].text == "for"):
            after = nxt
            if nxt == "[":
                close = matching(tokens, i + 1)
                after = tokens[close + 1].text if close + 1 < len(tokens) else ""
            if after in _ASSIGN:
                role = WRITE
        line_start = text.rfind("\n", 0, tok.start) + 1
        indent = len(text[line_start : tok.start]) - len(text[line_start : tok.start].lstrip())
        b.use(at.scope, tok.start, tok.end, t, role, line_start + indent, _statement_end(text, tok.start))

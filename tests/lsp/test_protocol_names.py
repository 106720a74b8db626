"""Issue 28: the ``tvmExplorer/`` custom methods are named alike in the server
(``lsp/protocol.py``), the extension (``lsp_ext.ts``, the only file of the extension that
declares them) and the protocol document (``docs/lsp-protocol.md``).

Everything is read as text: no server process, no import of pygls. Command and view ids
(``tvmExplorer.showReferences``, with a dot) are not methods and are left out."""

from __future__ import annotations

import ast
import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
PROTOCOL_PY = REPO / "server" / "tvm_explorer" / "lsp" / "protocol.py"
LSP_EXT_TS = REPO / "vscode-extension" / "src" / "lsp_ext.ts"
EXTENSION_SRC = REPO / "vscode-extension" / "src"
PROTOCOL_MD = REPO / "docs" / "lsp-protocol.md"

PREFIX = "tvmExplorer/"
METHOD = re.compile(r"tvmExplorer/[A-Za-z_]\w*")

# After these (or at the start) a `/` begins a regular expression literal, not a division.
_REGEX_BEFORE = set("(,=:[!&|?{};+-*%<>~^") | {""}
_REGEX_KEYWORDS = {
    "return",
    "typeof",
    "case",
    "do",
    "else",
    "in",
    "of",
    "new",
    "delete",
    "void",
    "throw",
    "instanceof",
    "yield",
    "await",
}


def ts_string_literals(source: str) -> list[str]:
    """The text of every string and template literal of a TypeScript file (comments and
    regular expression literals skipped). Template literals count whole, `${...}` included."""
    out: list[str] = []
    i, n = 0, len(source)
    last = ""  # the last significant token's last character (or a keyword), for `/`
    while i < n:
        c = source[i]
        if source.startswith("//", i):
            i = source.find("\n", i)
            i = n if i < 0 else i
        elif source.startswith("/*", i):
            end = source.find("*/", i + 2)
            i = n if end < 0 else end + 2
        elif c in "'\"`":
            j, depth = i + 1, 0
            while j < n:
                if source[j] == "\\":
                    j += 2
                    continue
                if c == "`" and source.startswith("${", j):
                    depth += 1
                elif c == "`" and depth and source[j] == "}":
                    depth -= 1
                elif source[j] == c and not depth:
                    break
                j += 1
            out.append(source[i + 1 : j])
            i, last = j + 1, c
        elif c == "/" and (last in _REGEX_BEFORE or last in _REGEX_KEYWORDS):
            j, in_class = i + 1, False
            while j < n and source[j] != "\n":
                if source[j] == "\\":
                    j += 2
                    continue
                if source[j] == "[":
                    in_class = True
                elif source[j] == "]":
                    in_class = False
                elif source[j] == "/" and not in_class:
                    break
                j += 1
            i, last = j + 1, "/"
        elif c.isalnum() or c in "_$":
            j = i
            while j < n and (source[j].isalnum() or source[j] in "_$"):
                j += 1
            last = source[i:j] if source[i:j] in _REGEX_KEYWORDS else "a"
            i = j
        else:
            if not c.isspace():
                last = c
            i += 1
    return out


def protocol_py_methods() -> set[str]:
    """The method-name constants of protocol.py (module-level string assignments)."""
    tree = ast.parse(PROTOCOL_PY.read_text(encoding="utf-8"))
    names = set()
    for node in tree.body:
        if (
            isinstance(node, ast.Assign)
            and isinstance(node.value, ast.Constant)
            and isinstance(node.value.value, str)
            and node.value.value.startswith(PREFIX)
        ):
            names.add(node.value.value)
    return names


def ts_methods(path: Path) -> set[str]:
    """The ``tvmExplorer/...`` names in string literals of a TypeScript file."""
    return {m for text in ts_string_literals(path.read_text(encoding="utf-8")) for m in METHOD.findall(text)}


def docs_methods() -> set[str]:
    return set(METHOD.findall(PROTOCOL_MD.read_text(encoding="utf-8")))


def test_the_readers_find_the_methods():
    # The control for the comparisons below: each reader finds the methods at all.
    for found in (protocol_py_methods(), ts_methods(LSP_EXT_TS), docs_methods()):
        assert {"tvmExplorer/listBundles", "tvmExplorer/bundlesChanged"} <= found


def test_string_literals_of_typescript():
    src = (
        "const a = 'tvmExplorer/x'; // 'tvmExplorer/comment'\n"
        "/* `tvmExplorer/block` */ const re = /[\"'`]/g; const d = 4 / 2 / 1;\n"
        "const t = `${id} tvmExplorer/y ${f('z')}`; const cmd = 'tvmExplorer.showReferences';\n"
        "return /\\/'/.test(s) ? \"tvmExplorer/w\" : '';\n"
    )
    found = {m for t in ts_string_literals(src) for m in METHOD.findall(t)}
    assert found == {"tvmExplorer/x", "tvmExplorer/y", "tvmExplorer/w"}


def test_every_server_method_is_documented():
    missing = protocol_py_methods() - docs_methods()
    assert not missing, f"methods of protocol.py missing from docs/lsp-protocol.md: {sorted(missing)}"


def test_every_documented_method_is_the_servers():
    unknown = docs_methods() - protocol_py_methods()
    assert not unknown, f"docs/lsp-protocol.md names methods protocol.py lacks: {sorted(unknown)}"


def test_every_extension_method_is_the_servers():
    unknown = ts_methods(LSP_EXT_TS) - protocol_py_methods()
    assert not unknown, f"lsp_ext.ts declares methods protocol.py lacks: {sorted(unknown)}"


def test_methods_are_declared_only_in_lsp_ext():
    elsewhere = {
        path.name: sorted(found)
        for path in sorted(EXTENSION_SRC.glob("*.ts"))
        if path != LSP_EXT_TS and (found := ts_methods(path))
    }
    assert not elsewhere, f"tvmExplorer/ methods named outside lsp_ext.ts: {elsewhere}"

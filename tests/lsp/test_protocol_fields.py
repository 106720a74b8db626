"""Issue 44: the params and results of every ``tvmExplorer/`` method have the same field names
in the server (``lsp/protocol.py``'s attrs classes and the typed dicts of the domain documents
they carry: ``compare/types.py``, ``graphview/types.py``) and in the extension (the interfaces
of ``lsp_ext.ts`` and the webview types it imports), down through every nested object that
both sides type; ``test_protocol_names.py`` compares the method names.

The TypeScript is read as text (its interfaces' members); the Python types are imported.
Optional and required fields count alike: a field the server leaves out is ``name?`` in
TypeScript, still the same name."""

from __future__ import annotations

import re
import typing
from pathlib import Path

import attrs
import pytest

from tvm_explorer.lsp import protocol

REPO = Path(__file__).resolve().parents[2]
EXTENSION = REPO / "vscode-extension"
LSP_EXT_TS = EXTENSION / "src" / "lsp_ext.ts"

_COMMENTS = re.compile(r"//[^\n]*|/\*.*?\*/", re.S)
_INTERFACE = re.compile(r"export\s+interface\s+(\w+)\s*(?:extends\s+([\w\s,.]+?))?\s*\{")
_IMPORT = re.compile(r"import\s+(?:type\s+)?\{([^}]*)\}\s+from\s+'(\.[^']+)'")
_REQUEST = re.compile(r"new\s+lc\.(RequestType|NotificationType)<")
_MEMBER = re.compile(r"^\s*(?:readonly\s+)?([A-Za-z_]\w*)\??\s*:\s*(.*)$", re.S)


def _closing(text: str, start: int, open_ch: str = "{", close_ch: str = "}") -> int:
    """The index of the bracket closing the one at ``start``."""
    depth = 0
    for i in range(start, len(text)):
        if text[i] == open_ch:
            depth += 1
        elif text[i] == close_ch:
            depth -= 1
            if depth == 0:
                return i
    raise ValueError(f"unbalanced {open_ch} at {start}")


def _split_top(text: str, seps: str) -> list[str]:
    """``text`` cut at the separators that are outside any bracket or string."""
    out, depth, cur, quote = [], 0, [], ""
    for ch in text:
        if quote:
            quote = "" if ch == quote else quote
        elif ch in "'\"`":
            quote = ch
        elif ch in "{[(<":
            depth += 1
        elif ch in "}])>":
            depth -= 1
        elif ch in seps and depth == 0:
            out.append("".join(cur))
            cur = []
            continue
        cur.append(ch)
    out.append("".join(cur))
    return [part.strip() for part in out if part.strip()]


def members(body: str) -> dict[str, str]:
    """The members of an object type's body: name -> type text (methods left out)."""
    out = {}
    for part in _split_top(body, ";\n"):
        m = _MEMBER.match(part)
        if m and "(" not in part.split(":")[0]:
            out[m.group(1)] = m.group(2).strip().rstrip(",")
    return out


class Members:
    """An object type's members: name -> (type text, the file that reads it)."""

    def __init__(self, types: dict[str, tuple[str, TsTypes]] | None = None):
        self.types = types or {}

    def __iter__(self):
        return iter(self.types)


class TsTypes:
    """The exported interfaces of a TypeScript file and of the files it imports them from."""

    def __init__(self, path: Path, seen: dict[Path, TsTypes] | None = None):
        seen = {} if seen is None else seen
        seen[path] = self
        self.path = path
        self.text = _COMMENTS.sub("", path.read_text(encoding="utf-8"))
        self.interfaces: dict[str, tuple[list[str], str]] = {}
        for m in _INTERFACE.finditer(self.text):
            brace = m.end() - 1
            bases = [b.strip() for b in (m.group(2) or "").split(",") if b.strip()]
            self.interfaces[m.group(1)] = (bases, self.text[brace + 1 : _closing(self.text, brace)])
        self.imported: dict[str, TsTypes] = {}
        for m in _IMPORT.finditer(self.text):
            target = (path.parent / (m.group(2) + ".ts")).resolve()
            if target.is_file():
                other = seen.get(target) or TsTypes(target, seen)
                for name in m.group(1).split(","):
                    self.imported[name.strip().split(" as ")[0]] = other

    def interface(self, name: str) -> Members | None:
        """The members of an interface (its bases' included), or None when it is not one."""
        if name in self.imported:
            return self.imported[name].interface(name)
        if name not in self.interfaces:
            return None
        bases, body = self.interfaces[name]
        out: dict[str, tuple[str, TsTypes]] = {}
        for base in bases:
            out.update((self.interface(base) or Members()).types)
        out.update({n: (t, self) for n, t in members(body).items()})
        return Members(out)

    def structure(self, type_text: str) -> Members | None:
        """The members a type names when it is an object type (an interface, an inline object,
        an array or a record of one, with ``| null``), else None (a primitive, a union of
        literals, an LSP type, ``unknown``); each member's type is read in its own file."""
        parts = [p for p in _split_top(type_text, "|") if p not in ("null", "undefined")]
        if len(parts) != 1:
            return None
        t = parts[0]
        while t.startswith("(") and t.endswith(")"):
            t = t[1:-1].strip()
        if t.endswith("[]"):
            return self.structure(t[:-2])
        if t.startswith("Record<string,") and t.endswith(">"):
            return self.structure(t[len("Record<string,") : -1])
        if t.startswith("{") and t.endswith("}"):
            return Members({n: (tt, self) for n, tt in members(t[1:-1]).items()})
        if re.fullmatch(r"[A-Za-z_]\w*", t):
            return self.interface(t)
        return None

    def messages(self) -> dict[str, tuple[str, str | None]]:
        """Method -> (params type text, result type text; None for a notification)."""
        out = {}
        for m in _REQUEST.finditer(self.text):
            end = _closing(self.text, m.end() - 1, "<", ">")
            args = _split_top(self.text[m.end() : end], ",")
            method = re.match(r"\s*\(\s*'([^']+)'", self.text[end + 1 :])
            assert method, f"{self.path.name}: a {m.group(1)} without a method name"
            out[method.group(1)] = (args[0], args[1] if m.group(1) == "RequestType" else None)
        return out


def _is_ours(tp) -> bool:
    return (attrs.has(tp) or typing.is_typeddict(tp)) and tp.__module__.startswith("tvm_explorer.")


def _unwrap(tp):
    """The object type a Python annotation names (through Optional, list and dict values), or
    None when it names none of ours."""
    origin = typing.get_origin(tp)
    if origin in (typing.Union, getattr(__import__("types"), "UnionType", None)):
        args = [a for a in typing.get_args(tp) if a is not type(None)]
        return _unwrap(args[0]) if len(args) == 1 else None
    if origin in (list, tuple):
        args = typing.get_args(tp)
        return _unwrap(args[0]) if args else None
    if origin is dict:
        return _unwrap(typing.get_args(tp)[1])
    return tp if isinstance(tp, type) and _is_ours(tp) else None


def py_fields(tp) -> dict[str, object]:
    """Field name (as sent: ``pass_`` is ``pass``) -> annotation, of an attrs class or a
    typed dict of ours."""
    hints = typing.get_type_hints(tp)
    names = [f.name for f in attrs.fields(tp)] if attrs.has(tp) else list(hints)
    return {("pass" if n == "pass_" else n): hints[n] for n in names}


def mismatches(py_type, ts_type: str, ts: TsTypes, where: str) -> list[str]:
    """Where the field names of a Python type and a TypeScript type differ, recursively
    through the fields both sides type as objects."""
    py = _unwrap(py_type)
    ts_members = ts.structure(ts_type)
    if py is None or ts_members is None:
        return []
    fields = py_fields(py)
    out = []
    if set(fields) != set(ts_members):
        only_py, only_ts = sorted(set(fields) - set(ts_members)), sorted(set(ts_members) - set(fields))
        out.append(f"{where} ({py.__name__} / {ts_type}): only in Python {only_py}, only in TypeScript {only_ts}")
    for name in sorted(set(fields) & set(ts_members)):
        text, owner = ts_members.types[name]
        out += mismatches(fields[name], text, owner, f"{where}.{name}")
    return out


def _py_messages() -> dict[str, tuple[object, object]]:
    out: dict[str, tuple[object, object]] = {}
    for method, (request, result) in protocol.MESSAGE_TYPES.items():
        out[method] = (typing.get_type_hints(request)["params"], result)
    out[protocol.BUNDLES_CHANGED] = (protocol.BundlesChangedParams, None)
    return out


def test_the_reader_finds_fields_through_extends_imports_and_inline_objects():
    # The control: the readers see what the comparison below relies on.
    ts = TsTypes(LSP_EXT_TS)
    assert {"subgraph", "op_index", "opcode", "name", "id"} == set(ts.interface("StageLayer") or ())
    graph = ts.structure("GraphDocument")  # imported from the graph app's types
    assert graph is not None and "nodes" in graph
    text, owner = graph.types["nodes"]
    assert "places" in (owner.structure(text) or ())  # read in the file that declares GraphNode
    assert set(ts.structure("{ a: number; b?: string | null }") or ()) == {"a", "b"}
    assert set(py_fields(protocol.HistoryStep)) >= {"pass", "lines", "before"}
    messages = ts.messages()
    assert messages["tvmExplorer/compareBundles"] == ("CompareBundlesParams", "CompareResult")
    assert messages["tvmExplorer/bundlesChanged"] == ("BundlesChangedParams", None)


def test_a_missing_field_is_found(tmp_path):
    # A TypeScript type that lost a field of a nested object, and gained one, is reported.
    (tmp_path / "x.ts").write_text(
        "export interface Side { uri: string; ranges: lc.Range[]; extra: number }\n"
        "export interface R { layers: unknown[]; steps: { pass: null; stage: string; summary: string; "
        "changes: string[]; lines: unknown; before: Side; after: Side }[]; passes: number; hidden: number; "
        "marks: unknown[]; labels: string[]; bundle: string }\n"
    )
    got = mismatches(protocol.LayerHistoryResult, "R", TsTypes(tmp_path / "x.ts"), "R")
    assert got == [
        "R.steps (HistoryStep / { pass: null; stage: string; summary: string; changes: string[]; lines: unknown; "
        "before: Side; after: Side }[]): only in Python ['marks'], only in TypeScript []",
        "R.steps.after (HistorySide / Side): only in Python [], only in TypeScript ['extra']",
        "R.steps.before (HistorySide / Side): only in Python [], only in TypeScript ['extra']",
    ]


def test_every_method_has_its_types_on_both_sides():
    ts = TsTypes(LSP_EXT_TS).messages()
    assert set(ts) == set(_py_messages()), "methods differ (test_protocol_names.py says which)"


@pytest.mark.parametrize("method", sorted(_py_messages()))
def test_params_and_result_fields_match(method):
    ts = TsTypes(LSP_EXT_TS)
    py_params, py_result = _py_messages()[method]
    ts_params, ts_result = ts.messages()[method]
    problems = mismatches(py_params, ts_params, ts, f"{method} params")
    if py_result is not None and ts_result is not None:
        problems += mismatches(py_result, ts_result, ts, f"{method} result")
    assert not problems, "\n".join(problems)


def test_every_result_is_typed():
    # No custom request answers an untyped ``Any`` (a dict with an ``error`` key, say): its
    # failures are LSP errors and its result a class or a typed dict the comparison reads.
    untyped = sorted(m for m, (_, result) in protocol.MESSAGE_TYPES.items() if result is typing.Any)
    assert not untyped, f"results typed Any: {untyped}"

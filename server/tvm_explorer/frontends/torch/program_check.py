"""Check a ``.pt2`` program's graph JSON before torch reads it: nothing in it may become code.

Loading an ExportedProgram, torch evaluates strings of the archive's ``models/*.json`` as
Python: every ``expr_str`` goes to ``sympy.sympify``, every ``guards_code`` line is ``exec``\\ ed,
and names become the source of the ``forward`` that torch.fx generates and runs (placeholder
names, keyword names, attribute paths, the keys of the input spec). A model file is data: every
such string must be in the form torch itself writes — an expression or a guard of the grammars
in ``symbolic.py``, or a plain name — and a file where one is not is refused with one message
naming the archive entry and where in it (``ProgramRefused``; the CLI exits 2: unlike a pickle,
``--trust-pickle`` does not load it).

Everything else (stack traces, module paths, string arguments, the torch version) is data to
torch and stays as it is.
"""

from __future__ import annotations

import json
import keyword
import re

from tvm_explorer.errors import ModelError
from tvm_explorer.frontends.torch.symbolic import Refused, check_expression, check_guard

_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,1023}\Z")
_DOTTED = re.compile(r"[A-Za-z0-9_]{1,1024}(?:\.[A-Za-z0-9_]{1,1024}){0,64}\Z")
_SPEC_TEXT = re.compile(r"[A-Za-z0-9_. :/-]{0,256}\Z")

# the fields of torch/_export/serde/schema.py whose string value torch turns into code
_NAME_FIELDS = frozenset({"name", "as_name", "user_input_name"})
_DOTTED_FIELDS = frozenset(
    {"parameter_name", "buffer_name", "tensor_constant_name", "custom_obj_name", "target", "as_operator"}
)
_NAMED_MAPS = frozenset({"tensor_values", "sym_int_values", "sym_bool_values", "sym_float_values", "custom_obj_values"})
_SPECS = frozenset({"in_spec", "out_spec"})


class ProgramRefused(ModelError):
    """A string of a ``.pt2`` program that torch would evaluate is not in the form torch writes."""

    def __init__(self, path: str, entry: str, what: str, where: str, value: object, why: str):
        self.path, self.entry = path, entry
        shown = repr(value)
        shown = shown if len(shown) <= 80 else shown[:77] + "..."
        super().__init__(
            f"{path}: archive entry {entry}: {what} at {where} ({shown}) {why}; torch would "
            f"evaluate it as Python code when loading the file, and a model file is data, so "
            f"tvm-explorer does not load it (not even with --trust-pickle)"
        )


def check_program(path: str, entry: str, program: object) -> None:
    """Raise ProgramRefused unless every string of ``program`` (the parsed JSON of archive
    entry ``entry``) that torch evaluates is in the form torch writes."""
    if not isinstance(program, dict):
        return  # not a program: torch says so, evaluating nothing
    guards = program.get("guards_code", [])
    for i, guard in enumerate(guards if isinstance(guards, list) else [guards]):
        _check(path, entry, "the guard", f"guards_code[{i}]", guard, check_guard)
    ranges = program.get("range_constraints")
    for key in ranges if isinstance(ranges, dict) else ():  # a symbol, or a derived one ("2*s40")
        _check(path, entry, "the symbol", f"range_constraints[{key[:40]!r}]", key, check_expression)
    stack: list[tuple[object, tuple]] = [(program.get("graph_module"), ("graph_module",))]
    while stack:
        node, where = stack.pop()
        if isinstance(node, list):
            stack.extend((item, (*where, i)) for i, item in enumerate(node) if isinstance(item, (dict, list)))
            continue
        if not isinstance(node, dict):
            continue
        for key, value in node.items():
            at = (*where, key)
            if key == "expr_str":
                _check(path, entry, "the symbolic size", _where(at), value, check_expression)
            elif key == "metadata":
                _check(path, entry, "the metadata", _where(at), value, _text_map)
            elif key in _NAME_FIELDS and (value is None or isinstance(value, str)):
                if value or key != "name":  # a positional argument's name is "", a node's may be null
                    _check(path, entry, "the name", _where(at), value, _identifier)
            elif key in _DOTTED_FIELDS and isinstance(value, str):
                _check(path, entry, "the qualified name", _where(at), value, _dotted)
            elif key == "fqn" and isinstance(value, str):
                _check(path, entry, "the module path", _where(at), value, lambda v: v == "" or _dotted(v))
            elif key == "forward_arg_names" and value is not None:
                for i, name in enumerate(value if isinstance(value, list) else [value]):
                    _check(path, entry, "the argument name", _where((*at, i)), name, _identifier)
            elif key in _SPECS and value is not None:
                _check(path, entry, "the input/output spec", _where(at), value, _spec)
            elif key == "treespec_namedtuple_fields" and isinstance(value, dict):
                for type_name, fields in value.items():
                    _check(path, entry, "the type name", _where(at), type_name, _dotted)
                    names = fields.get("field_names", []) if isinstance(fields, dict) else fields
                    for i, name in enumerate(names if isinstance(names, list) else [names]):
                        _check(path, entry, "the field name", _where((*at, type_name, i)), name, _identifier)
            else:
                if key in _NAMED_MAPS and isinstance(value, dict):
                    for name in value:
                        _check(path, entry, "the name", _where((*at, name)), name, _identifier)
                if isinstance(value, (dict, list)):
                    stack.append((value, at))


def _check(path: str, entry: str, what: str, where: str, value: object, check) -> None:
    try:
        ok = check(value)
    except Refused as why:
        raise ProgramRefused(path, entry, what, where, value, str(why)) from None
    if ok is False:
        raise ProgramRefused(path, entry, what, where, value, "is not a plain name")


def _where(at: tuple) -> str:
    out = ""
    for part in at:
        if isinstance(part, int):
            out += f"[{part}]"
        elif _IDENTIFIER.match(part):
            out += f".{part}" if out else part
        else:
            out += f"[{part[:40]!r}]"
    return out


def _identifier(value: object) -> bool:
    return isinstance(value, str) and bool(_IDENTIFIER.match(value)) and not keyword.iskeyword(value)


def _dotted(value: object) -> bool:
    return isinstance(value, str) and bool(_DOTTED.match(value))


def _text_map(value: object) -> bool:
    """Node metadata: strings torch parses as data (stack traces, module paths)."""
    if not isinstance(value, dict) or not all(isinstance(v, str) for v in value.values()):
        raise Refused("is not a map of strings")
    return True


def _spec(value: object) -> bool:
    """A pytree spec (JSON in a string): its type names are qualified names, and the keys of
    its dicts and named tuples (which torch.fx writes into the generated ``forward``) plain."""
    if not isinstance(value, str) or len(value) > 16 * 2**20:
        raise Refused("is not a pytree spec")
    try:
        stack = [json.loads(value)]
    except (ValueError, RecursionError):
        raise Refused("is not a pytree spec (not JSON)") from None
    while stack:
        node = stack.pop()
        if isinstance(node, list):
            stack.extend(node)
        elif isinstance(node, dict):
            for key, item in node.items():
                if key == "type" and item is not None and not _dotted(item):
                    raise Refused(f"names the type {item!r}")
                if key == "context" and isinstance(item, str):
                    try:
                        stack.append(json.loads(item))
                    except (ValueError, RecursionError):
                        raise Refused("has a context that is not JSON") from None
                elif key != "type":
                    stack.append(item)
        elif isinstance(node, str) and not _SPEC_TEXT.match(node):
            raise Refused(f"has the key {node[:40]!r}, which is not a plain name")
    return True


MAX_PROGRAM_JSON = 256 * 1024 * 1024
"""Largest program JSON read (a graph's JSON is a few MB even for large models)."""


def is_program_entry(name: str) -> bool:
    """Whether torch reads archive entry ``name`` (its folder prefix removed) as a program:
    everything under ``models/`` (``torch.export.pt2_archive._package``), and the older
    format's ``serialized_exported_program.json``."""
    return name.startswith("models/") or name == "serialized_exported_program.json"


def short_name(filename: str) -> str:
    """``data/weights/weight_0`` for ``resnet/data/weights/weight_0`` (torch's reader drops the
    archive's folder)."""
    return filename.split("/", 1)[1] if "/" in filename else filename


def check_archive(path: str, archive) -> set[bytes]:
    """Check every program in the ``zipfile.ZipFile`` ``archive`` of ``path`` (``check_program``);
    returns the SHA-256 digests of the program entries checked. An entry name twice (two zip
    readers could pick different ones) is refused too."""
    seen: set[str] = set()
    checked: set[bytes] = set()
    for info in archive.infolist():
        if info.filename in seen:
            raise ModelError(
                f"{path}: archive entry {short_name(info.filename)} appears twice; "
                "torch.export.save writes each entry once, so this file was altered and is not loaded"
            )
        seen.add(info.filename)
        entry = short_name(info.filename)
        if info.is_dir() or not is_program_entry(entry):
            continue
        if info.file_size > MAX_PROGRAM_JSON:
            raise ModelError(
                f"{path}: archive entry {entry} is {info.file_size // 2**20} MB, more than the "
                f"{MAX_PROGRAM_JSON // 2**20} MB of a program's graph"
            )
        raw = archive.read(info)
        checked.add(check_program_bytes(path, entry, raw))
    return checked


def check_program_bytes(path: str, entry: str, raw: bytes) -> bytes:
    """``check_program`` on the JSON ``raw``; returns its SHA-256 digest."""
    import hashlib

    try:
        program = json.loads(raw)
    except (ValueError, RecursionError) as err:
        what = "nested too deeply" if isinstance(err, RecursionError) else f"not JSON ({err})"
        raise ModelError(f"{path}: archive entry {entry} is {what}; a truncated or altered file?") from None
    check_program(path, entry, program)
    return hashlib.sha256(raw).digest()

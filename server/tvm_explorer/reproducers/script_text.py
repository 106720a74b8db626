"""Bundle strings in a reproducer script are inert: a script the user runs must run only what
tvm-explorer wrote, whoever made the bundle.

- In the ``#`` header every bundle string (model file, TVM version, pass names, opcodes,
  paths, ...) goes through ``comment`` (``inert/python.py``): one line, line breaks and other unprintable
  characters (also lone surrogates) written as escapes. A newline used to end the comment,
  and the next line ran as a statement.
- In code, values are ``repr`` literals (``TARGET``, ``KERNELS``).
- The kernels' and references' TVMScript is code by nature (the class bodies run their
  decorators, and TVMScript's parser evaluates expressions with the script's globals), so
  ``check_functions`` admits only what TVM prints: decorated ``def``\\ s of ``T.``/``R.``
  calls on their own names — no imports, statements outside a function, dunder or private
  attributes, string tricks, or names reaching the script's modules or Python's I/O builtins.
- ``check_imports`` admits only ``from tvm... import NAME [as NAME]``.
"""

from __future__ import annotations

import ast
import re

from tvm_explorer.errors import ExplorerError
from tvm_explorer.inert.python import comment

__all__ = ["check_functions", "comment", "tvm_import"]

_IMPORT = re.compile(
    r"from (tvm(?:\.[A-Za-z_][A-Za-z0-9_]*)*) import ([A-Za-z_][A-Za-z0-9_]*)"
    r"(?: as ([A-Za-z_][A-Za-z0-9_]*))?",
    re.ASCII,
)


def tvm_import(line: str) -> str | None:
    """``from tvm.X import Y [as Z]`` if ``line`` is exactly that (TVMScript's header lines),
    else None: nothing else a document says is imported."""
    m = _IMPORT.fullmatch(line)
    return m.group(0) if m else None


# Names a TVMScript expression must not reach: the script's modules and the builtins that
# read, write, import, evaluate or introspect. A function's own parameter may carry one of
# these names (TVM names a buffer `input`): it is bound before the body is evaluated.
_DENIED_NAMES = frozenset(
    {
        "sys",
        "time",
        "np",
        "tvm",
        "__builtins__",
        "__import__",
        "open",
        "eval",
        "exec",
        "compile",
        "getattr",
        "setattr",
        "delattr",
        "hasattr",
        "globals",
        "locals",
        "vars",
        "dir",
        "breakpoint",
        "input",
        "help",
        "exit",
        "quit",
        "memoryview",
        "type",
        "object",
        "super",
        "classmethod",
        "staticmethod",
        "property",
    }
)
# Namespaces under T/R/I that are TVMScript's own machinery (parser, builder), not IR.
_DENIED_NAMESPACES = frozenset({"parser", "builder", "entry", "frame", "ir"})
_DECORATORS = {"prim_func": "T", "function": "R"}
_FORBIDDEN = (
    ast.Import,
    ast.ImportFrom,
    ast.Global,
    ast.Nonlocal,
    ast.ClassDef,
    ast.FunctionDef,
    ast.AsyncFunctionDef,
    ast.AsyncFor,
    ast.AsyncWith,
    ast.Await,
    ast.Yield,
    ast.YieldFrom,
    ast.JoinedStr,
    ast.NamedExpr,
    ast.Try,
    ast.Raise,
    ast.Delete,
    ast.ListComp,
    ast.SetComp,
    ast.DictComp,
    ast.GeneratorExp,
)


class _Refused(Exception):
    def __init__(self, node: ast.AST | None, why: str):
        super().__init__(why)
        self.line = getattr(node, "lineno", None)


def _root(node: ast.expr) -> ast.expr:
    while isinstance(node, ast.Attribute):
        node = node.value
    return node


def _check_decorator(node: ast.expr) -> None:
    call = node.func if isinstance(node, ast.Call) else node
    if not (
        isinstance(call, ast.Attribute)
        and isinstance(call.value, ast.Name)
        and _DECORATORS.get(call.attr) == call.value.id
    ):
        raise _Refused(node, "a decorator other than T.prim_func or R.function")
    if isinstance(node, ast.Call):
        for arg in [*node.args, *(k.value for k in node.keywords)]:
            if not isinstance(arg, ast.Constant):
                raise _Refused(node, "a decorator argument that is not a constant")


def _check_function(func: ast.FunctionDef) -> None:
    for decorator in func.decorator_list:
        _check_decorator(decorator)
    args = func.args
    params = {a.arg for a in [*args.posonlyargs, *args.args, *args.kwonlyargs]}
    # Annotations and defaults are evaluated before the parameters are bound.
    for a in [*args.posonlyargs, *args.args, *args.kwonlyargs]:
        if a.annotation is not None:
            _check_expr(a.annotation, frozenset())
    for default in [*args.defaults, *args.kw_defaults]:
        if default is not None:
            _check_expr(default, frozenset())
    for stmt in func.body:
        _check_expr(stmt, frozenset(params))


def _check_expr(node: ast.AST, bound: frozenset) -> None:
    """``node`` and everything under it; ``bound`` the names bound when it is evaluated (a
    lambda's parameters only inside its body)."""
    if isinstance(node, _FORBIDDEN):
        raise _Refused(node, f"the construct {type(node).__name__}")
    if isinstance(node, ast.Attribute):
        if node.attr.startswith("_"):
            raise _Refused(node, f"the private attribute .{node.attr}")
        if not isinstance(_root(node), ast.Name):
            raise _Refused(node, "an attribute of something other than a name")
        if isinstance(node.value, ast.Name) and node.value.id in ("T", "R", "I") and node.attr in _DENIED_NAMESPACES:
            raise _Refused(node, f"TVMScript's {node.value.id}.{node.attr}")
    elif isinstance(node, ast.Name):
        if node.id.startswith("__") or (node.id in _DENIED_NAMES and node.id not in bound):
            raise _Refused(node, f"the name {node.id}")
    elif isinstance(node, ast.Lambda):
        for default in [*node.args.defaults, *node.args.kw_defaults]:
            if default is not None:
                _check_expr(default, bound)
        _check_expr(node.body, bound | {a.arg for a in node.args.args})
        return
    for child in ast.iter_child_nodes(node):
        _check_expr(child, bound)


def check_functions(text: str, what: str) -> None:
    """Raise ExplorerError unless ``text`` (a class body at 4-space indent) is only
    TVMScript function definitions as TVM prints them. ``what`` names it in the message."""
    try:
        if not text.replace("\n", "").isprintable():
            raise _Refused(None, "an unprintable character (a control character, line separator or lone surrogate)")
        lines = text.split("\n")
        for i, line in enumerate(lines, 1):
            if line and not line.startswith("    "):
                raise _Refused(None, f"line {i} is outside the class body")
        try:
            tree = ast.parse("\n".join(line[4:] for line in lines))
        except SyntaxError as err:
            raise _Refused(None, f"not Python syntax: {err.msg} at line {err.lineno}") from None
        for stmt in tree.body:
            if not isinstance(stmt, ast.FunctionDef):
                raise _Refused(stmt, f"the statement {type(stmt).__name__} outside a function")
            _check_function(stmt)
    except _Refused as refused:
        where = f" (line {refused.line} of it)" if refused.line else ""
        raise ExplorerError(
            f"{what}: its text holds {refused}{where}, which TVM does not "
            "print; not written into a script (the bundle may have been "
            "tampered with)"
        ) from None

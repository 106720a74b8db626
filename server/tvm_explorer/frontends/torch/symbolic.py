"""The strict grammars of the code-like strings a ``.pt2`` carries: symbolic sizes and guards.

torch's deserializer hands every ``expr_str`` of the program's JSON to ``sympy.sympify``, which
*evaluates* it as Python, and turns each ``guards_code`` line into Python source that it
``exec``\\ s. A model file is data, so these strings are checked here first, and one that is not
in the form torch writes is refused (the caller names the archive entry).

What torch 2.13 writes (``sympy.srepr``) and what older torch wrote (``str``) both parse:

- a size expression: numbers; symbols named as torch names them (``s77``, ``u0``, ``zf3`` …),
  bare or as ``Symbol('s77', positive=True, integer=True)``; the operators ``+ - * / // % **``,
  comparisons, ``& | ~``; and calls of a fixed list of sympy and torch functions (``Add``,
  ``Mul``, ``FloorDiv``, ``Max``, ``Equality`` …). No attribute, subscript, lambda or other name.
- a guard: ``L['x'].size()[0]``-style references to the inputs, numbers, arithmetic,
  comparisons, ``and/or/not``, and a few math functions.

Both are bounded so that evaluating them cannot exhaust the machine: at most
``MAX_EXPRESSION`` characters, ``MAX_DEPTH`` nesting, integers of ``MAX_DIGITS`` digits, and
powers and shifts whose exponent is a small literal (at most ``MAX_EXPONENT``), never nested.
"""

from __future__ import annotations

import re

MAX_EXPRESSION = 64 * 1024
MAX_DEPTH = 64
MAX_DIGITS = 40
MAX_EXPONENT = 64
MAX_POWERS = 16

# torch/utils/_sympy/symbol.py prefix_str, then the index
SYMBOL_NAME = re.compile(r"(?:s|u|zf|zuf|tmp|ps|i|r0_|r1_|idx|x|y|z|indirect|view|h|q|c|d|f)[0-9]{1,9}\Z")
_CONSTANTS = frozenset({"oo", "zoo", "nan", "true", "false", "True", "False", "pi", "E", "int_oo"})
_SYMPY_FUNCTIONS = frozenset(
    {
        "Symbol", "Integer", "Float", "Rational", "Add", "Mul", "Pow", "Mod", "Max", "Min", "Abs",
        "floor", "ceiling", "sign", "sqrt", "Piecewise", "ExprCondPair", "Eq", "Ne", "Lt", "Le",
        "Gt", "Ge", "Equality", "Unequality", "StrictLessThan", "LessThan", "StrictGreaterThan",
        "GreaterThan", "And", "Or", "Not", "Xor", "ITE",
    }
)  # fmt: skip
# torch/_export/serde/serialize.py GraphModuleDeserializer.sympy_functions
_TORCH_FUNCTIONS = frozenset(
    {
        "FloorDiv", "ModularIndexing", "Where", "PythonMod", "CleanDiv", "CeilToInt", "FloorToInt",
        "CeilDiv", "LShift", "RShift", "PowByNatural", "FloatPow", "FloatTrueDiv", "IntTrueDiv",
        "IsNonOverlappingAndDenseIndicator", "TruncToFloat", "TruncToInt", "RoundToInt",
        "RoundDecimal", "ToFloat", "Identity",
    }
)  # fmt: skip
FUNCTIONS = _SYMPY_FUNCTIONS | _TORCH_FUNCTIONS
_POWERS = frozenset({"Pow", "PowByNatural", "FloatPow", "LShift", "RShift", "**"})
_ASSUMPTIONS = frozenset(
    {
        "commutative", "integer", "positive", "negative", "nonnegative", "nonpositive", "real",
        "finite", "infinite", "zero", "nonzero", "rational", "irrational", "even", "odd", "prime",
        "composite", "complex", "imaginary", "extended_real", "extended_positive",
        "extended_negative", "extended_nonnegative", "extended_nonpositive", "extended_nonzero",
        "noninteger", "algebraic", "transcendental", "hermitian", "antihermitian",
    }
)  # fmt: skip
_FLOAT_TEXT = re.compile(r"[-+]?(?:[0-9]{1,40}(?:\.[0-9]{0,40})?(?:[eE][-+]?[0-9]{1,4})?|inf|nan)\Z")

_TOKEN = re.compile(
    r"""(?P<space>[ \t]+)
    |(?P<num>[0-9]+(?:\.[0-9]*)?(?:[eE][-+]?[0-9]+)?|\.[0-9]+(?:[eE][-+]?[0-9]+)?)
    |(?P<name>[A-Za-z_][A-Za-z0-9_]*)
    |(?P<str>'[A-Za-z0-9_.+-]*'|"[A-Za-z0-9_.+-]*")
    |(?P<op>\*\*|//|<=|>=|==|!=|[-+*/%<>(),=&|~])""",
    re.VERBOSE,
)
_BINARY = {
    "|": 1, "&": 2, "<": 4, "<=": 4, ">": 4, ">=": 4, "==": 4, "!=": 4,
    "+": 5, "-": 5, "*": 6, "/": 6, "//": 6, "%": 6, "**": 8,
}  # fmt: skip


class Refused(ValueError):
    """Why a string is not in the grammar (the message says what was found where)."""


def check_expression(text: object) -> None:
    """Raise ``Refused`` unless ``text`` is a size expression as torch writes it."""
    if not isinstance(text, str):
        raise Refused(f"is a {type(text).__name__}, not a string")
    if len(text) > MAX_EXPRESSION:
        raise Refused(f"is {len(text)} characters long (at most {MAX_EXPRESSION})")
    tree = _Parser(_tokens(text)).parse()
    _check_tree(tree)


def _tokens(text: str) -> list[tuple[str, str]]:
    out, pos = [], 0
    while pos < len(text):
        match = _TOKEN.match(text, pos)
        if match is None:
            raise Refused(f"has {text[pos : pos + 12]!r} at character {pos}, which is not part of a size expression")
        kind = match.lastgroup or ""
        if kind != "space":
            out.append((kind, match.group()))
        pos = match.end()
    return out


class _Parser:
    """Precedence climbing over the tokens; the tree is nested tuples:
    ``("num", text)``, ``("name", text)``, ``("str", text)``, ``("neg", op, x)``,
    ``("bin", op, a, b)``, ``("call", name, args, kwargs)``, ``("tuple", items)``."""

    def __init__(self, tokens: list[tuple[str, str]]):
        self.tokens, self.pos, self.depth = tokens, 0, 0

    def parse(self):
        if not self.tokens:
            raise Refused("is empty")
        tree = self.expression(0)
        if self.pos != len(self.tokens):
            raise Refused(f"has {self.tokens[self.pos][1]!r} where the expression should end")
        return tree

    def peek(self) -> tuple[str, str]:
        return self.tokens[self.pos] if self.pos < len(self.tokens) else ("end", "")

    def take(self, value: str | None = None) -> tuple[str, str]:
        token = self.peek()
        if token[0] == "end" or (value is not None and token[1] != value):
            raise Refused(f"ends early or has {token[1]!r} where {value or 'more'!r} was expected")
        self.pos += 1
        return token

    def expression(self, floor: int):
        self.depth += 1
        if self.depth > MAX_DEPTH:
            raise Refused(f"is nested more than {MAX_DEPTH} deep")
        left = self.unary()
        while True:
            kind, op = self.peek()
            prec = _BINARY.get(op) if kind == "op" else None
            if prec is None or prec < floor:
                break
            self.pos += 1
            # ** binds right (its right side may start with a sign); the others left
            right = self.expression(prec if op == "**" else prec + 1)
            left = ("bin", op, left, right)
        self.depth -= 1
        return left

    def unary(self):
        kind, op = self.peek()
        if kind == "op" and op in ("-", "+", "~"):
            self.pos += 1
            return ("neg", op, self.expression(_BINARY["**"] if op != "~" else 3))
        return self.atom()

    def atom(self):
        kind, text = self.take()
        if kind in ("num", "str"):
            return (kind, text)
        if kind == "op" and text == "(":
            items = [self.expression(0)]
            while self.peek() == ("op", ","):  # a tuple: str() of Piecewise((1, c), (0, True))
                self.pos += 1
                items.append(self.expression(0))
            self.take(")")
            return items[0] if len(items) == 1 else ("tuple", items)
        if kind != "name":
            raise Refused(f"has {text!r} where a value was expected")
        if self.peek() != ("op", "("):
            return ("name", text)
        self.pos += 1
        args, kwargs = [], []
        while self.peek() != ("op", ")"):
            if self.peek()[0] == "name" and self.tokens[self.pos + 1 : self.pos + 2] == [("op", "=")]:
                key = self.take()[1]
                self.pos += 1
                kwargs.append((key, self.expression(0)))
            elif kwargs:
                raise Refused(f"passes a positional argument after a keyword argument to {text}")
            else:
                args.append(self.expression(0))
            if self.peek() != ("op", ")"):
                self.take(",")
        self.take(")")
        return ("call", text, args, kwargs)


def _check_tree(tree) -> None:
    powers = [0]

    def number(node) -> None:
        if len(node[1]) > MAX_DIGITS:
            raise Refused(f"has a {len(node[1])}-digit number (at most {MAX_DIGITS})")

    def visit(node, in_power: bool = False) -> None:
        kind = node[0]
        if kind == "num":
            number(node)
        elif kind == "str":
            raise Refused(f"has the string {node[1]} outside Symbol(...) or Float(...)")
        elif kind == "name":
            if node[1] not in _CONSTANTS and not SYMBOL_NAME.match(node[1]):
                raise Refused(f"names {node[1]!r}, which is neither a size symbol nor a constant")
        elif kind == "neg":
            visit(node[2], in_power)
        elif kind == "bin":
            operation(node[1], [node[2], node[3]], in_power)
        elif kind == "tuple":
            for item in node[1]:
                visit(item, in_power)
        else:
            call(node, in_power)

    def operation(op: str, args: list, in_power: bool) -> None:
        if op not in _POWERS:
            for arg in args:
                visit(arg, in_power)
            return
        # a power or shift: its exponent a small literal, never inside another one
        if in_power:
            raise Refused(f"nests {op} inside another power or shift")
        powers[0] += 1
        if powers[0] > MAX_POWERS:
            raise Refused(f"has more than {MAX_POWERS} powers or shifts")
        if len(args) != 2 or not _small_literal(args[1]):
            raise Refused(f"has {op} whose exponent is not a number up to {MAX_EXPONENT}")
        for arg in args:
            visit(arg, True)

    def call(node, in_power: bool) -> None:
        _kind, name, args, kwargs = node
        if name not in FUNCTIONS:
            raise Refused(f"calls {name!r}, which is not a sympy or torch size function")
        if name in ("Symbol", "Float"):
            literal(name, args, kwargs)
        elif kwargs:
            raise Refused(f"passes keyword arguments to {name}")
        elif name in ("Integer", "Rational"):
            if not 1 <= len(args) <= 2 or any(not _is_integer(a) for a in args):
                raise Refused(f"calls {name} with something other than integers")
            for arg in args:
                number(arg[2] if arg[0] == "neg" else arg)
        else:
            operation(name, args, in_power)

    def literal(name: str, args: list, kwargs: list) -> None:
        if len(args) != 1:
            raise Refused(f"calls {name} with {len(args)} positional arguments")
        (arg,) = args
        text = arg[1][1:-1] if arg[0] == "str" else None
        if name == "Symbol" and (text is None or not SYMBOL_NAME.match(text)):
            raise Refused(f"makes a symbol named {arg[1] if arg[0] in ('str', 'name', 'num') else '(an expression)'}")
        if name == "Float":
            if text is not None and not _FLOAT_TEXT.match(text):
                raise Refused(f"makes a Float of {arg[1]}")
            if text is None and not _is_number(arg):
                raise Refused("makes a Float of an expression")
            if text is None:
                number(arg[2] if arg[0] == "neg" else arg)
        for key, value in kwargs:
            if name == "Symbol" and key in _ASSUMPTIONS and value in (("name", "True"), ("name", "False")):
                continue
            if name == "Float" and key in ("precision", "dps") and _is_integer(value) and _small(value[1], 1024):
                continue
            raise Refused(f"passes {key}= to {name}")

    visit(tree)


def _small(text: str, limit: int = MAX_EXPONENT) -> bool:
    try:
        return abs(float(text)) <= limit
    except ValueError:
        return False


def _small_literal(node) -> bool:
    """A power's exponent: a number of magnitude at most ``MAX_EXPONENT``, bare or as
    ``Integer(n)``, ``Rational(p, q)`` or ``Float('x')``; never a symbol (its value, a hint in
    the file, could be anything)."""
    if node[0] == "neg":
        node = node[2]
    if node[0] == "num":
        return _small(node[1])
    if node[0] != "call" or node[3] or not node[2]:
        return False
    name, args = node[1], node[2]
    if name in ("Integer", "Rational"):
        return all(_is_integer(a) and _small((a[2] if a[0] == "neg" else a)[1]) for a in args)
    if name == "Float" and len(args) == 1:
        arg = args[0]
        text = arg[1][1:-1] if arg[0] == "str" else (arg[2] if arg[0] == "neg" else arg)[1]
        return bool(_FLOAT_TEXT.match(text)) and _small(text)
    return False


def _is_number(node) -> bool:
    if node[0] == "neg" and node[1] in "-+":
        node = node[2]
    return node[0] == "num"


def _is_integer(node) -> bool:
    return _is_number(node) and (node[2] if node[0] == "neg" else node)[1].isdigit()


# guards: torch/fx/experimental/symbolic_shapes.py ShapeGuardPythonPrinter, as
# torch/export/exported_program.py _convert_guards_to_code prints them
_GUARD_TOKEN = re.compile(
    r"""(?P<space>[ \t]+)
    |(?P<ref>L\['[A-Za-z_][A-Za-z0-9_]{0,255}'\])
    |(?P<key>\['[A-Za-z_][A-Za-z0-9_]{0,255}'\]|\[[0-9]{1,6}\])
    |(?P<method>\.(?:size|stride|storage_offset|dim|numel)\(\))
    |(?P<num>[0-9]+(?:\.[0-9]*)?(?:[eE][-+]?[0-9]+)?)
    |(?P<name>[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)?)
    |(?P<op>\*\*|//|<=|>=|==|!=|[-+*/%<>(),])""",
    re.VERBOSE,
)
_GUARD_NAMES = frozenset(
    {
        "and", "or", "not", "if", "else", "True", "False", "inf", "abs", "max", "min", "round",
        "int", "float", "math.floor", "math.ceil", "math.trunc", "math.sqrt", "math.isnan",
        "math.inf", "math.log2", "math.cos", "math.sin", "math.tan", "math.cosh", "math.sinh",
        "math.tanh", "math.acos", "math.asin", "math.atan", "math.exp", "math.log",
        "torch.sym_float", "torch.sym_int", "torch.sym_max", "torch.sym_min", "torch.sym_sqrt",
        "torch.sym_ite", "torch.sym_not",
    }
)  # fmt: skip
# what may come right after each kind of token (a reference is followed by a key or a method)
_AFTER_REF = ("key", "method")


def check_guard(text: object) -> None:
    """Raise ``Refused`` unless ``text`` is a guard as torch writes it."""
    if not isinstance(text, str):
        raise Refused(f"is a {type(text).__name__}, not a string")
    if len(text) > MAX_EXPRESSION:
        raise Refused(f"is {len(text)} characters long (at most {MAX_EXPRESSION})")
    tokens, pos, depth, powers = [], 0, 0, 0
    while pos < len(text):
        match = _GUARD_TOKEN.match(text, pos)
        if match is None:
            raise Refused(f"has {text[pos : pos + 12]!r} at character {pos}, which is not part of a guard")
        if match.lastgroup != "space":
            tokens.append((match.lastgroup or "", match.group()))
        pos = match.end()
    if not tokens:
        raise Refused("is empty")
    previous = ("start", "")
    for index, (kind, value) in enumerate(tokens):
        if kind == "name" and value not in _GUARD_NAMES:
            raise Refused(f"names {value!r}, which a guard does not use")
        if kind in _AFTER_REF and previous[0] not in ("ref", "key", "method"):
            raise Refused(f"has {value!r} that does not follow an input reference")
        if kind == "num" and len(value) > MAX_DIGITS:
            raise Refused(f"has a {len(value)}-digit number (at most {MAX_DIGITS})")
        if value == "(":
            depth += 1
            if depth > MAX_DEPTH:
                raise Refused(f"is nested more than {MAX_DEPTH} deep")
        elif value == ")":
            depth -= 1
            if depth < 0:
                raise Refused("closes a parenthesis it did not open")
        elif value == "**":
            powers += 1
            following = tokens[index + 1 : index + 3]
            if (
                powers > MAX_POWERS
                or not following
                or following[0][0] != "num"
                or not _small(following[0][1])
                or following[1:] == [("op", "**")]
            ):
                raise Refused(f"raises to a power other than an integer up to {MAX_EXPONENT}")
        previous = (kind, value)
    if depth:
        raise Refused("leaves a parenthesis open")

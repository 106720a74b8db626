"""The reference a reproducer checks a kernel against: the layer's own Relax ops, as the
model's import document has them, rebuilt into one Relax function per kernel.

A kernel is a PrimFunc of the TIR documents. FuseOps groups the calls LegalizeOps made into
fused Relax functions (one per fused kernel, named like it); LegalizeOps keeps the Relax
variables of the import, so each call in a fused function leads, through the LegalizeOps
document, to the import binding it legalized (``lv4 = R.call_tir(conv2d1, (lv3, lv9))`` ↔
``lv4 = R.nn.conv2d(lv3, lv9, ...)``). The reference function has the kernel's inputs as
parameters and the import's ops as bindings, with their arguments renamed to the fused
function's names.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from tvm_explorer.bundle.reader import Bundle
from tvm_explorer.errors import ExplorerError
from tvm_explorer.reproducers.signature import bracket_depths, read_signature, split_top


class ReferenceError(ExplorerError):
    """No reference can be built for a kernel from this bundle's documents."""


@dataclass(frozen=True)
class Reference:
    """One kernel's reference: a Relax function (TVMScript text, 4-space class indent)."""

    name: str
    text: str
    inputs: int  # how many of the kernel's arguments are inputs (the rest are outputs)
    source: str  # the import bindings it was built from, for the script's header


@dataclass(frozen=True)
class _CallTir:
    var: str
    prim: str
    args: list[str]


def _parse_call_tir(text: str) -> _CallTir | None:
    left, sep, right = text.partition(" = ")
    if not sep or not right.startswith("R.call_tir(") or not right.endswith(")"):
        return None
    parts = split_top(right[len("R.call_tir(") : -1])
    if len(parts) < 2 or not parts[1].startswith("("):
        return None
    var = left.split(":", 1)[0].strip()
    return _CallTir(var, parts[0].strip(), split_top(parts[1].strip()[1:-1]))


def _rename(text: str, mapping: dict[str, str]) -> str:
    """``text`` with every whole token of ``mapping`` replaced (identifiers and constants)."""
    if not mapping:
        return text
    alts = []
    for tok in sorted(mapping, key=len, reverse=True):
        if re.fullmatch(r"\w+", tok):
            alts.append(rf"(?<![\w.\"]){re.escape(tok)}(?![\w\"])")
        else:
            alts.append(re.escape(tok))
    return re.sub("|".join(alts), lambda m: mapping[m.group(0)], text)


def _safe_name(token: str, taken: set[str]) -> str:
    base = token if re.fullmatch(r"[A-Za-z_]\w*", token) else "const"
    name, k = base, 0
    while name in taken:
        k += 1
        name = f"{base}_{k}"
    taken.add(name)
    return name


class ReferenceBuilder:
    """Builds references for the kernels of one bundle."""

    def __init__(self, bundle: Bundle):
        self.bundle = bundle
        passes = bundle.manifest.get("passes", ())
        relax_docs = [d for d in bundle.documents if d.stage == "relax"]
        self.import_doc = relax_docs[0].path if relax_docs else None
        after = {p.get("name"): p.get("after") for p in passes if p.get("changed")}
        self.legalized_doc = after.get("LegalizeOps")
        self.fused_doc = after.get("FuseOps")

    def _need(self) -> None:
        if not (self.import_doc and self.legalized_doc):
            raise ReferenceError(
                f"{self.bundle.root}: the bundle has no import and LegalizeOps documents to build a reference from"
            )

    @property
    def _imported(self) -> str:
        assert self.import_doc is not None  # build() checked (_need)
        return self.import_doc

    @property
    def _legalized(self) -> str:
        assert self.legalized_doc is not None  # build() checked (_need)
        return self.legalized_doc

    def _text(self, path: str, rng) -> str:
        return self.bundle.text(path)[rng.start : rng.end]

    def _import_op(self, function: str, var: str) -> str | None:
        found = self.bundle.index(self._imported).by_key(f"bind:{function}:{var}")
        if not found:
            return None
        _, sep, rhs = self._text(self._imported, found[0]).partition(" = ")
        return rhs.strip() if sep else None

    def _legalized_calls(self, prim: str) -> list[tuple[str, _CallTir]]:
        out = []
        for rng in self.bundle.index(self._legalized).by_link(f"prim:{prim}"):
            call = _parse_call_tir(self._text(self._legalized, rng))
            if call is not None and rng.key.startswith("bind:"):
                out.append((rng.key.split(":")[1], call))
        return out

    def build(self, kernel: str) -> Reference:
        """The reference of PrimFunc ``kernel`` (fused or not)."""
        self._need()
        if self.fused_doc:
            found = self.bundle.index(self.fused_doc).by_key(f"func:{kernel}")
            if found:
                return self._fused(kernel, found[0])
        return self._single(kernel)

    def _single(self, kernel: str) -> Reference:
        calls = self._legalized_calls(kernel)
        if not calls:
            raise ReferenceError(
                f"{kernel}: no Relax call of it in {self.legalized_doc}, so no Relax op to check it against"
            )
        function, call = calls[0]
        op = self._import_op(function, call.var)
        if op is None:
            raise ReferenceError(
                f"{kernel}: binding {call.var} of {self.legalized_doc} has no counterpart in {self.import_doc}"
            )
        prim = self.bundle.index(self._legalized).by_key(f"prim:{kernel}")
        if not prim:
            raise ReferenceError(f"{kernel}: not printed in {self.legalized_doc}")
        _, sig = read_signature(self._text(self._legalized, prim[0]))
        if len(sig) < len(call.args) or not all(a.is_buffer for a in sig[: len(call.args)]):
            raise ReferenceError(f"{kernel}: its arguments do not match its call in {self.legalized_doc}")
        taken: set[str] = set()
        mapping: dict[str, str] = {}
        params: list[str] = []
        for token, arg in zip(call.args, sig):
            if token not in mapping:
                mapping[token] = _safe_name(token, taken)
            assert arg.shape is not None  # a buffer (checked above)
            params.append(f'{mapping[token]}: R.Tensor({_shape(arg.shape)}, dtype="{arg.dtype}")')
        if len(set(call.args)) != len(call.args):
            raise ReferenceError(f"{kernel}: passes one value twice; not supported")
        body = _rename(op, mapping)
        text = (
            f"    @R.function\n    def {kernel}({', '.join(params)}):\n"
            f"        with R.dataflow():\n            gv = {body}\n            R.output(gv)\n"
            f"        return gv"
        )
        return Reference(kernel, text, len(call.args), call.var)

    def _fused(self, kernel: str, func_range) -> Reference:
        assert self.fused_doc is not None  # build() calls this only with FuseOps's document
        index = self.bundle.index(self.fused_doc)
        doc_text = self.bundle.text(self.fused_doc)
        inner = [
            r
            for r in index.ranges
            if r.kind == "binding"
            and r.key.startswith(f"bind:{kernel}:")
            and func_range.start <= r.start
            and r.end <= func_range.end
        ]
        inner_map: dict[str, str] = {}  # fused-function variable -> LegalizeOps variable
        edits: list[tuple[int, int, str]] = []
        used = []
        for rng in inner:
            call = _parse_call_tir(doc_text[rng.start : rng.end])
            if call is None:
                continue  # not a call of a PrimFunc (a tuple, ...): kept as printed
            function, main = self._match(call, inner_map)
            op = self._import_op(function, main.var)
            if op is None:
                raise ReferenceError(
                    f"{kernel}: binding {main.var} of {self.legalized_doc} has no counterpart in {self.import_doc}"
                )
            inner_map[call.var] = main.var
            mapping: dict[str, str] = {}
            for main_tok, inner_tok in zip(main.args, call.args):
                if mapping.setdefault(main_tok, inner_tok) != inner_tok:
                    raise ReferenceError(f"{kernel}: ambiguous arguments of {main.var}")
            edits.append((rng.start, rng.end, f"{call.var} = {_rename(op, mapping)}"))
            used.append(main.var)
        if not edits:
            raise ReferenceError(f"{kernel}: its fused function in {self.fused_doc} calls nothing")
        pieces, pos = [], func_range.start
        for start, end, new in edits:
            pieces += [doc_text[pos:start], new]
            pos = end
        pieces.append(doc_text[pos : func_range.end])
        text = "".join(pieces)
        lines = []
        for line in text.split("\n"):
            if line.strip().startswith("R.func_attr("):
                continue
            if line.strip().startswith("@R.function"):
                line = "@R.function"
            lines.append(line)
        text = "    " + "\n".join(lines)
        header = next(line for line in lines if line.strip().startswith("def "))
        inputs = len(split_top(_parenthesized(header, header.index("("))))
        return Reference(kernel, text, inputs, ", ".join(used))

    def _match(self, call: _CallTir, inner_map: dict[str, str]) -> tuple[str, _CallTir]:
        """The LegalizeOps binding that a call inside a fused function came from."""
        candidates = self._legalized_calls(call.prim)
        if not candidates:
            raise ReferenceError(f"{call.prim}: no call of it in {self.legalized_doc}")
        for function, main in candidates:
            if main.var == call.var:
                return function, main
        # Else the call whose arguments computed inside the fused function are the same values.
        for function, main in candidates:
            if len(main.args) == len(call.args) and all(
                inner_map[a] == b for a, b in zip(call.args, main.args) if a in inner_map
            ):
                return function, main
        return candidates[0]


def _parenthesized(text: str, open_at: int) -> str:
    """The text inside the bracket opening at ``open_at`` (up to its matching close)."""
    for i, ch, depth in bracket_depths(text, open_at):
        if ch in ")]}" and depth == 0:
            return text[open_at + 1 : i]
    return text[open_at + 1 :]


def _shape(dims: tuple[int, ...]) -> str:
    return "(" + ", ".join(map(str, dims)) + ("," if len(dims) == 1 else "") + ")"

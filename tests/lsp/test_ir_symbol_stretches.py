"""A document's symbols lexed one top-level function at a time answer exactly what a table of
the whole document answers: on every document of real bundles (c and cuda), and on crafted
texts that try to cut a document in the wrong place."""

from __future__ import annotations

import re

import pytest

from tvm_explorer.bundle.reader import Bundle
from tvm_explorer.navigation.irsymbols.clike import clike_symbols
from tvm_explorer.navigation.irsymbols.document import CLIKE, SCRIPT, DocumentSymbols
from tvm_explorer.navigation.irsymbols.tvmscript import script_symbols

WHOLE = {SCRIPT: script_symbols, CLIKE: clike_symbols}


def assert_same_answers(text: str, language: str) -> DocumentSymbols:
    """Every question navigation asks, at every occurrence and between them, answered alike."""
    whole = WHOLE[language](text)
    doc = DocumentSymbols(lambda: text, language)
    offsets = sorted(
        {o for occ in whole.occurrences for o in (occ.start, occ.end, occ.start - 1)} | set(range(0, len(text) + 1, 97))
    )
    for offset in offsets:
        assert doc.at(offset) == whole.at(offset), offset
    for occ in whole.occurrences:
        assert doc.definition(occ) == whole.defs[occ.symbol], occ
        assert doc.occurrences(occ.symbol) == whole.of_symbol(occ.symbol), occ
    step = max(1, len(text) // 50)
    for start in range(0, len(text), step):
        assert doc.between(start, start + 3 * step) == whole.between(start, start + 3 * step)
    for d in whole.defs.values():
        top = d.stmt_start - (text.rfind("\n", 0, d.stmt_start) + 1) <= 4 or language == CLIKE
        if d.kind == "function" and top:
            first = next(
                x
                for x in sorted(whole.defs.values(), key=lambda x: x.start)
                if x.name == d.name and x.kind == "function"
            )
            assert doc.function(d.name) == first
    return doc


@pytest.fixture(scope="module")
def real_documents(real_workspace):
    docs = []
    for name, root in real_workspace["bundles"].items():
        bundle = Bundle(root)
        for d in bundle.documents:
            if d.stage in ("relax", "tir"):
                docs.append((f"{name}/{d.path}", bundle.text(d.path), SCRIPT))
            elif d.stage == "code" and d.path.endswith((".c", ".cu")):
                docs.append((f"{name}/{d.path}", bundle.text(d.path), CLIKE))
    return docs


def test_real_documents_answer_alike_by_stretches(real_documents):
    languages = {lang for _, _, lang in real_documents}
    assert languages == {SCRIPT, CLIKE} and any(p.endswith(".cu") for p, _, _ in real_documents)
    for path, text, language in real_documents:
        doc = assert_same_answers(text, language)
        assert doc._whole is None, f"{path} fell back to the whole document"
        functions = sum(1 for d in doc._module if d.kind == "function")
        assert functions and len(doc._starts) >= functions, f"{path} was not cut into functions"


CRAFTED_C = """\
#include <stdint.h>
#define OPEN {
static const char* note = "a } and a { in a string";
int32_t helper(int32_t a);  // declared first, used before its body
__device__ inline float twice(float x) { return x * 2.0f; } /* one-line body,
   comment going on past the line */ __device__ float thrice(float x) { return 3.0f * x; }
int32_t helper(int32_t a) {
  char c = '{';
  int32_t t = a;
  for (int32_t i = 0; i < 4; ++i) {
    t += i;
  }
  return t + twice(1.0f);
}
} // a stray brace

int32_t main_fn(int32_t* out, int32_t n) {
  int32_t acc = helper(n);
  out[0] = acc;
  return thrice((float)acc) > 0;
}
"""

CRAFTED_SCRIPT = """\
# from tvm.script import ir as I
scale = 3
@I.ir_module
class Module:
    @T.prim_func
    def add(A: T.Buffer((4,), "float32"), B: T.Buffer((4,), "float32")):
        for i in range(4):
            B[i] = A[i] + T.float32(scale)

    @R.function
    def main(x: R.Tensor((4,), "float32")) -> R.Tensor((4,), "float32"):
        cls = Module
        lv = R.call_tir(cls.add, (x,), out_sinfo=R.Tensor((4,), "float32"))
        gv = add(lv, scale)
        return gv
"""


def test_crafted_c_with_braces_in_strings_comments_and_one_line_bodies():
    doc = assert_same_answers(CRAFTED_C, CLIKE)
    assert doc._whole is None and len(doc._starts) >= 3
    assert doc.function("helper").kind == "function" and doc.function("thrice") is not None


def test_crafted_tvmscript_with_module_level_assignments():
    doc = assert_same_answers(CRAFTED_SCRIPT, SCRIPT)
    assert doc._whole is None and len(doc._starts) == 3


def test_a_wrong_cut_falls_back_to_the_whole_document():
    # ``def later`` starts a physical line inside an open bracket: the lexer reads it as part
    # of the statement before, the outline as a module-level function.
    text = CRAFTED_SCRIPT.replace("        gv = add(lv, scale)\n", "        gv = add(lv,\n    def later, scale)\n")
    doc = DocumentSymbols(lambda: text, SCRIPT)
    doc.at(text.index("lv,"))  # lexing that function finds the outline wrong
    assert doc._whole is not None
    assert_same_answers(text, SCRIPT)


@pytest.mark.parametrize("text, language", [(CRAFTED_C, CLIKE), (CRAFTED_SCRIPT, SCRIPT)])
def test_preparing_a_document_scans_its_functions_and_lexes_nothing(text, language):
    doc = DocumentSymbols(lambda: text, language)
    doc.prepare()
    by_name = len(doc._starts) - (language == SCRIPT)  # TVMScript's preamble is lexed whole
    assert len(doc._structures) == by_name > 0 and not doc._stretches and not doc._named
    stopped = DocumentSymbols(lambda: text, language)
    stopped.prepare(stop=lambda: True)
    assert not stopped._structures


def test_tables_held_stay_within_the_bound(monkeypatch):
    from tvm_explorer.navigation.irsymbols import document

    monkeypatch.setattr(document, "STRETCH_OCCURRENCES_KEPT", 4)
    doc = DocumentSymbols(lambda: CRAFTED_C_NAMES, CLIKE)
    for name in ("x", "acc", "y", "i", "q", "x2", "r"):
        doc.at(re.search(rf"\b{name}\b", CRAFTED_C_NAMES).start())
        assert doc._held <= 4 or len(doc._named) == 1
    assert doc._held == sum(len(t) for t in doc._named.values())


# Every shortcut the one-name tables of C take (a plain read inside a function) next to what
# must be lexed instead: members after ``.``/``->`` (and a dot ending a comment or a number),
# writes first in their statement or after ``for (``, definitions, a comment between a name
# and its ``=``, a ``;`` in a string, names used before and after a second definition.
CRAFTED_C_NAMES = """\
extern "C" __global__ void __launch_bounds__(64) kern(pair* __restrict__ p, float* q, int n) {
  float x = p[0].x + p->y;
  float acc[4];
  for (int i = 0; i < n; ++i) {
    acc[i] = x * 2.f;  // ends with a dot.
    x = acc[i]
      + q[i];
  }
  const char* s = "x; {";
  int y = n /* n */ ;
  /* first */ y = y + 1;
  q[0] = 1. + x + acc[1];
  float x2 = x; x2 += y;
  for (i = 0; i < 2; ++i) { q[i] = x2; }
  int i; i = n;
  pair r; r.x = q[1]; r.y = (r.x).x;
  q[2] = r.y + // comment.
    y;
  float y = q[3];
  q[4] = y + 1.e-5f + x;
}
"""


def test_crafted_c_one_name_tables_answer_as_the_whole():
    doc = assert_same_answers(CRAFTED_C_NAMES, CLIKE)
    assert doc._whole is None and doc._named  # (``between`` lexes stretches whole)


def _long_line_script(count: int) -> str:
    """A Relax function whose call holds ``count`` strings and names ``x`` ``count`` times on
    one line (a thousand-layer model's), then a comment after a string with ``x`` in both."""
    args = ", ".join(f'x, "s{i}"' for i in range(count))
    return (
        "@I.ir_module\nclass Module:\n    @R.function\n"
        '    def main(x: R.Tensor((4,), "float32")):\n'
        f'        lv = R.call_packed("f", {args})\n'
        '        gv = R.call_packed("x", x)  # x "x" x\n'
        "        return gv\n"
    )


def test_names_on_a_line_of_many_strings_answer_as_the_whole():
    assert_same_answers(_long_line_script(40), SCRIPT)


def test_a_line_of_many_strings_is_scanned_for_them_once(monkeypatch):
    # Each occurrence used to walk the line's strings up to itself: 2,000 occurrences on a
    # line of 1,000 strings took 1.5 s (tests/…/scaling's thousand-layer chain model).
    from tvm_explorer.navigation.irsymbols import script_names

    text = _long_line_script(1000)
    scans = []
    real = script_names.SCRIPT_SKIPPED

    class Counting:
        def finditer(self, *args):
            scans.append(args)
            return real.finditer(*args)

    monkeypatch.setattr(script_names, "SCRIPT_SKIPPED", Counting())
    doc = DocumentSymbols(lambda: text, SCRIPT)
    use = text.index('x, "s500"')
    assert doc.at(use).name == "x"
    assert len(doc.occurrences(doc.at(use).symbol)) > 1000
    assert len(scans) <= 3  # once per line holding the name and a string, not per occurrence

"""Offsets <-> LSP positions, and drift of an edited document (protocol-free units)."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from tvm_explorer.navigation.drift import Drift
from tvm_explorer.navigation.positions import LineIndex

TEXT = "ab\n🙂x = 1\r\n\n  é🙂\n"


def test_utf16_columns_count_surrogate_pairs():
    lines = LineIndex(TEXT)
    x = TEXT.index("x")
    assert lines.position(x) == (1, 2)
    assert lines.offset(1, 2) == x
    last = TEXT.rindex("🙂")
    assert lines.position(last) == (3, 3)
    assert lines.position(last + 1) == (3, 5)


def test_utf8_and_utf32_columns():
    x = TEXT.index("x")
    assert LineIndex(TEXT, "utf-8").position(x) == (1, 4)
    assert LineIndex(TEXT, "utf-32").position(x) == (1, 1)
    assert LineIndex(TEXT, "utf-8").offset(1, 4) == x


def test_crlf_is_one_line_break():
    lines = LineIndex(TEXT)
    assert lines.line_text(1) == "🙂x = 1"
    assert lines.position(TEXT.index("\r")) == (1, 7)
    assert lines.offset(2, 0) == TEXT.index("\n\n") + 1


def test_past_the_end_and_blank_positions_have_no_token():
    lines = LineIndex(TEXT)
    assert lines.offset(1, 99) is None
    assert lines.offset(99, 0) is None
    assert lines.token_offset(2, 0) is None  # blank line
    assert lines.token_offset(3, 0) is None  # indentation
    assert lines.token_offset(0, 2) == 1  # right after "ab" means "ab"
    assert lines.token_offset(0, 0) == 0


def test_column_inside_surrogate_pair_snaps_to_the_character():
    lines = LineIndex(TEXT)
    assert lines.offset(1, 1) == TEXT.index("🙂")


@given(st.text(alphabet=st.sampled_from("a é🙂\n\r\t"), max_size=60), st.data())
def test_position_and_offset_round_trip(text, data):
    for encoding in ("utf-16", "utf-8", "utf-32"):
        lines = LineIndex(text, encoding)
        offset = data.draw(st.integers(0, len(text)))
        if 0 < offset < len(text) and text[offset - 1 : offset + 1] == "\r\n":
            continue  # inside a line break: no column of its own
        assert lines.offset(*lines.position(offset)) == offset


def test_drift_shifts_outside_and_drops_inside_the_edit():
    original = "aaa bbb ccc ddd"
    current = "aaa bXXbb ccc ddd"  # inserted inside "bbb"
    drift = Drift(original, current)
    assert not drift.clean
    assert drift.to_original(0) == 0
    assert drift.to_original(current.index("ccc")) == original.index("ccc")
    assert drift.to_original(current.index("X")) is None
    assert drift.to_current(0, 3) == (0, 3)
    assert drift.to_current(8, 11) == (10, 13)
    assert drift.to_current(4, 7) is None  # "bbb" was edited
    assert drift.to_current(0, 15) is None  # encloses the edit
    assert Drift(original, original).to_current(4, 7) == (4, 7)


def test_drift_drops_a_range_glued_to_the_edit():
    drift = Drift("lv3 = f(x)", "lv3x = f(x)")
    assert drift.to_current(0, 3) is None
    assert drift.to_current(6, 10) == (7, 11)


@given(st.text(alphabet="ab\n", max_size=30), st.text(alphabet="ab\n", max_size=30))
def test_drift_maps_only_identical_characters(original, current):
    drift = Drift(original, current)
    for offset, char in enumerate(current):
        back = drift.to_original(offset)
        if back is not None:
            assert original[back] == char
    for start in range(len(original)):
        for end in range(start, min(len(original), start + 4) + 1):
            moved = drift.to_current(start, end)
            if moved is not None:
                assert current[moved[0] : moved[1]] == original[start:end]


@given(st.lists(st.tuples(st.integers(0, 9000), st.sampled_from("aé🙂")), min_size=1, max_size=12), st.data())
def test_long_texts_counted_by_blocks_agree_with_their_lines(lines_spec, data):
    # Lines longer and shorter than the index's blocks, breaks right at block edges.
    lines = [char * width for width, char in lines_spec]
    text = "\n".join(lines)
    index = LineIndex(text)
    for _ in range(20):
        line = data.draw(st.integers(0, len(lines) - 1))
        column = data.draw(st.integers(0, len(lines[line])))
        offset = sum(len(x) + 1 for x in lines[:line]) + column
        units = len(lines[line][:column].encode("utf-16-le")) // 2
        assert index.position(offset) == (line, units)
        assert index.offset(line, units) == offset
        assert index.line_text(line) == lines[line]
    assert index.line_count == len(lines)


@settings(deadline=None)  # texts up to 100 k characters, each compared at 20 positions
@given(
    st.lists(st.tuples(st.integers(0, 9000), st.sampled_from("a b\té")), min_size=1, max_size=12),
    st.sampled_from(["utf-16", "utf-8", "utf-32"]),
    st.data(),
)
def test_line_starts_without_the_text_answer_as_the_text_does(lines_spec, encoding, data):
    # A bundle document's index keeps its line starts only and reads the text again for a
    # token; every answer must be the one of the index that keeps the text.
    lines = [char * width for width, char in lines_spec]
    text = "\n".join(lines)
    reads = []
    lean = LineIndex(text, encoding, lambda: reads.append(1) or text)
    full = LineIndex(text, encoding)
    assert lean.line_count == full.line_count == len(lines)
    keeps_text = encoding == "utf-8" and not text.isascii()  # columns are not characters
    if keeps_text:
        assert lean.held_bytes() >= len(text)
    else:
        assert lean.held_bytes() == 4 * lean.line_count  # its line starts (4 bytes each), no text
    for _ in range(20):
        offset = data.draw(st.integers(-2, len(text) + 2))
        assert lean.position(offset) == full.position(offset)
        line = data.draw(st.integers(-1, len(lines)))
        column = data.draw(st.integers(-1, 9002))
        assert lean.offset(line, column) == full.offset(line, column)
        assert lean.token_offset(line, column) == full.token_offset(line, column)
        if 0 <= line < len(lines):
            assert lean.line_text(line) == full.line_text(line)
    if not keeps_text:
        assert reads, "the lean index reads the text from its source"


def test_a_bundle_line_index_keeps_no_text(real_workspace):
    from tvm_explorer.navigation import registry

    view = registry.load(real_workspace["bundles"]["small_cnn_fp32_cuda"])
    for doc in view.bundle.documents:
        text = view.bundle.text(doc.path)
        lines = view.line_index(doc.path, "utf-16")
        if text.isascii() and text.count("\n") > 10:
            assert lines.held_bytes() < len(text) / 4, doc.path
        last = text.count("\n")
        assert lines.position(len(text)) == (last, len(text) - text.rfind("\n") - 1)
        assert lines.offset(last, 0) == text.rfind("\n") + 1


def test_the_lines_of_every_document_are_indexed_after_a_load(real_workspace):
    from tvm_explorer.lsp.shared import Session
    from tvm_explorer.navigation import registry

    session = Session()
    view = registry.load(real_workspace["bundles"]["small_cnn_fp32_cuda"])
    session.registry.install(view.root, view, registry.signature(view.root))
    session.warm_lines(view)
    assert {path for path, _ in view._line_indexes} == {d.path for d in view.bundle.documents}
    assert (
        sum(lines.held_bytes() for lines in view._line_indexes.values())
        < sum(len(view.bundle.text(d.path)) for d in view.bundle.documents) / 4
    )

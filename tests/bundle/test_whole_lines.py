"""``Bundle.whole_lines``: a document's lines around some ranges, read from the file held open
since the load (the layer history reads a few lines of each of 50 documents, not 60 MiB), with
the same answer as widening over the whole text, and the same guard: a document replaced on
disk is never answered from."""

from __future__ import annotations

import os
import random

import pytest

from lsp.fake_bundle import write_fake_bundle
from tvm_explorer.bundle.files import BundleChanged
from tvm_explorer.bundle.reader import Bundle

C = "code/module.c"


def _widened(text: str, spans):
    """What whole_lines must answer: each span widened to its lines, touching pieces joined."""
    out = []
    for start, end in sorted(spans):
        lo = text.rfind("\n", 0, start) + 1
        hi = text.find("\n", max(end - 1, start))
        hi = len(text) if hi < 0 else hi
        if out and lo <= out[-1][1] + 1:
            if hi > out[-1][1]:
                out[-1] = (out[-1][0], hi, text[out[-1][0] : hi])
            continue
        out.append((lo, hi, text[lo:hi]))
    return out


def test_lines_around_spans_are_those_of_the_whole_text(tmp_path):
    root = write_fake_bundle(tmp_path / "b")
    bundle = Bundle(root)
    bundle.preload()
    rng = random.Random(0)
    for doc in bundle.documents:
        text = (root / doc.path).read_text()
        for _ in range(40):
            spans = [
                (a, min(len(text), a + rng.randrange(200)))
                for a in (rng.randrange(len(text) + 1) for _ in range(rng.randrange(1, 12)))
            ]
            assert bundle.whole_lines(doc.path, spans) == _widened(text, spans), (doc.path, spans)
    # The ASCII documents are read around the spans, never whole; one with characters of
    # several bytes (relax/004-LegalizeOps.relax) is read whole (its offsets are characters).
    wide = {d.path for d in bundle.documents if not (root / d.path).read_bytes().isascii()}
    assert wide and set(bundle._texts) == wide


def test_a_document_replaced_on_disk_is_not_answered_from(tmp_path):
    root = write_fake_bundle(tmp_path / "b")
    bundle = Bundle(root)
    text = (root / C).read_text()
    # the same length, other text, a new modification time: another version of the file
    (root / C).write_text(text.replace("=", "-"))
    os.utime(root / C, ns=(1, 1))
    with pytest.raises(BundleChanged):
        bundle.whole_lines(C, [(0, 5)])

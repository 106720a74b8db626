"""Issue 18: a bundle directory changed by another process while it is read. The check "this
file lies inside the bundle" and the read must be one step (a hostile review swapped
``code/`` for a symlink to an outside copy and read it 308 times in 2,781 loads)."""

from __future__ import annotations

import os
import shutil
import threading
import time

from lsp.fake_bundle import write_fake_bundle
from tvm_explorer.bundle.reader import Bundle
from tvm_explorer.errors import BundleError

C = "code/module.c"


def test_swapping_a_directory_for_a_symlink_never_reads_outside(tmp_path):
    root = write_fake_bundle(tmp_path / "b")
    outside = tmp_path / "outside"
    shutil.copytree(root / "code", outside)
    (outside / "module.c").write_text("OUTSIDE " * 100)
    stop = threading.Event()
    swaps = 0

    def swapper() -> None:
        nonlocal swaps
        while not stop.is_set():
            os.rename(root / "code", root / "code.real")
            os.symlink(outside, root / "code")
            time.sleep(0.0005)
            os.unlink(root / "code")
            os.rename(root / "code.real", root / "code")
            swaps += 1
            time.sleep(0.0005)

    thread = threading.Thread(target=swapper)
    thread.start()
    reads = refused = outside_reads = 0
    try:
        # Until enough loads got as far as the read (a loaded machine needs longer), at most 20 s.
        deadline = time.monotonic() + 20.0
        while time.monotonic() < deadline and (reads < 300 or swaps < 300):
            try:
                text = Bundle(root).text(C)
            except BundleError:
                refused += 1
                continue
            reads += 1
            outside_reads += "OUTSIDE" in text
    finally:
        stop.set()
        thread.join()
    assert swaps > 100 and reads > 50, (swaps, reads, refused)
    assert outside_reads == 0, f"{outside_reads} of {reads} reads came from outside the bundle"

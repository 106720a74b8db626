"""Issue 18: a bundle directory changed by another process while it is read. The check "this
file lies inside the bundle" and the read must be one step (a hostile review swapped
``code/`` for a symlink to an outside copy and read it 308 times in 2,781 loads)."""

from __future__ import annotations

import json
import os
import shutil
import threading
import time

import pytest

from lsp.fake_bundle import write_fake_bundle
from tvm_explorer.bundle.reader import Bundle
from tvm_explorer.errors import BundleError

C = "code/module.c"


class _Swapper:
    """While in use, a thread swaps ``path`` for a symlink to ``outside`` and back, pausing
    ``pause`` seconds in each state; ``swaps`` counts the round trips."""

    def __init__(self, path, outside, pause: float):
        self.path, self.outside, self.pause = path, outside, pause
        self.swaps = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run)

    def _run(self) -> None:
        real = self.path.with_name(self.path.name + ".real")
        while not self._stop.is_set():
            os.rename(self.path, real)
            os.symlink(self.outside, self.path)
            time.sleep(self.pause)
            os.unlink(self.path)
            os.rename(real, self.path)
            self.swaps += 1
            time.sleep(self.pause)

    def __enter__(self) -> _Swapper:
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()


def test_swapping_a_directory_for_a_symlink_never_reads_outside(tmp_path):
    root = write_fake_bundle(tmp_path / "b")
    outside = tmp_path / "outside"
    shutil.copytree(root / "code", outside)
    (outside / "module.c").write_text("OUTSIDE " * 100)
    reads = refused = outside_reads = 0
    with _Swapper(root / "code", outside, 0.0005) as swapper:
        # Until enough loads got as far as the read (a loaded machine needs longer), at most 20 s.
        deadline = time.monotonic() + 20.0
        while time.monotonic() < deadline and (reads < 300 or swapper.swaps < 300):
            try:
                text = Bundle(root).text(C)
            except BundleError:
                refused += 1
                continue
            reads += 1
            outside_reads += "OUTSIDE" in text
    swaps = swapper.swaps
    assert swaps > 100 and reads > 50, (swaps, reads, refused)
    assert outside_reads == 0, f"{outside_reads} of {reads} reads came from outside the bundle"


def _costs(status: str) -> str:
    from tvm_explorer.bundle.sections.costs import SCHEMA_VERSION

    return json.dumps(
        {
            "schema_version": SCHEMA_VERSION,
            "total_ms": None,
            "profile": {"status": status},
            "layers": [],
            "kernels": [],
            "passes": [],
            "calls": [],
            "extra": [{"op_index": 0, "time_ms": 1.0}],
        }
    )


def _status_by_costs(bundle: Bundle) -> str:
    from tvm_explorer.bundle.sections import read_checked
    from tvm_explorer.bundle.sections.costs import SECTION

    return read_checked(bundle.root, SECTION, bundle.layers, bundle.budget)["profile"]["status"]


def _status_by_compare(bundle: Bundle) -> str:
    # compare reads costs.json leniently; which file it read shows in a layer's cost
    from tvm_explorer.compare.layers import read_costs

    return "OUTSIDE" if read_costs(bundle) else "INSIDE"


@pytest.mark.parametrize("read", [_status_by_costs, _status_by_compare], ids=["costs", "compare"])
def test_swapping_costs_json_for_a_symlink_never_reads_outside(tmp_path, read):
    """Issue 26 item 5: costs.json was checked (``resolve_inside``), then opened again by
    name: swapped for a symlink in between, the outside file was read."""
    root = write_fake_bundle(tmp_path / "b")
    inside = json.loads(_costs("INSIDE"))
    del inside["extra"]
    (root / "costs.json").write_text(json.dumps(inside))
    outside = tmp_path / "outside.json"
    outside_costs = json.loads(_costs("OUTSIDE"))
    outside_costs["layers"] = [{"subgraph": 0, "op_index": 0, "time_ms": 1.0}]
    outside.write_text(json.dumps(outside_costs) if read is _status_by_compare else _costs("OUTSIDE"))
    bundle = Bundle(root)
    reads = refused = outside_reads = 0
    with _Swapper(root / "costs.json", outside, 0.0002) as swapper:
        deadline = time.monotonic() + 15.0
        while time.monotonic() < deadline and (reads < 3000 or swapper.swaps < 1000):
            try:
                status = read(bundle)
            except (BundleError, TypeError):
                refused += 1
                continue
            reads += 1
            outside_reads += status == "OUTSIDE"
    swaps = swapper.swaps
    assert swaps > 100 and reads > 50, (swaps, reads, refused)
    assert outside_reads == 0, f"{outside_reads} of {reads} reads came from outside the bundle"


def test_out_of_descriptors_is_named_as_the_process_s_not_the_file_s(tmp_path):
    """Issue 26 item 9: a server out of descriptors reported "cannot read manifest (Too many
    open files)" about a good manifest. Run in a child whose limit is lowered and used up."""
    import subprocess
    import sys

    root = write_fake_bundle(tmp_path / "b")
    code = f"""
import os, resource
from pathlib import Path
from tvm_explorer.bundle.reader import Bundle
from tvm_explorer.errors import BundleError
resource.setrlimit(resource.RLIMIT_NOFILE, (64, 64))
held = []
try:
    while True:
        held.append(os.open("/dev/null", os.O_RDONLY))
except OSError:
    pass
try:
    Bundle({str(root)!r})
except BundleError as err:
    print(err)
"""
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert proc.stdout.strip() == (
        f"{root}/manifest.json: cannot read manifest (this process has "
        "too many files open (its limit is 64); the file itself may be "
        "fine)"
    ), proc.stdout + proc.stderr

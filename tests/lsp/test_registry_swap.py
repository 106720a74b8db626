"""A bundle swapped while the server reads it: the registry must remember the signature of
the version it actually read. Found by the LSP storm test (tests/lsp/test_fuzz_storm.py):
the load began on version A, A was swapped for B during the read, the load retried and
returned B, but the watcher remembered A's signature; when A was swapped back, the directory
looked "unchanged" and B stayed loaded for good."""

from __future__ import annotations

import json
import time

from tvm_explorer.bundle.writer import _exchange
from tvm_explorer.navigation import registry

from .fake_bundle import write_fake_bundle


def _two_versions(tmp_path):
    live = write_fake_bundle(tmp_path / "live" / "gt")
    other = write_fake_bundle(tmp_path / "stage" / "gt")
    manifest = json.loads((other / "manifest.json").read_text())
    manifest["model"]["file"] = "version_b.tflite"
    (other / "manifest.json").write_text(json.dumps(manifest))
    return live, other


def test_load_returns_the_signature_of_the_version_it_read(tmp_path):
    live, other = _two_versions(tmp_path)
    sig_a = registry.signature(live)
    swapped = []

    def swap_once(_k, _n, _path):
        if not swapped:
            assert _exchange(other, live)
            swapped.append(True)

    view = registry.load(live, swap_once)
    assert view.bundle.manifest["model"]["file"] == "version_b.tflite"  # read again, whole
    assert view.signature == registry.signature(live) != sig_a

    # The watcher, remembering what was read, sees the swap back to A as a change.
    reg = registry.Registry()
    reg.install(live, view, view.signature)
    assert _exchange(other, live)
    assert registry.signature(live) == sig_a
    found = []
    deadline = time.monotonic() + 5
    while not found and time.monotonic() < deadline:
        found = reg.changed()
        time.sleep(0.1)
    assert found == [live]

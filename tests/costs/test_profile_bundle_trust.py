"""``tvm-explorer profile BUNDLE`` runs nothing the bundle names (issue 37 item 2).

A bundle is data someone may hand over; its manifest records the Relax pipeline it was
compiled with (a Python module) and the model's path. ``profile`` used to import that pipeline
from the manifest: a shared bundle folder ran its own ``tune.py``. The pipeline is now taken
only from ``--pipeline`` on the command line; a manifest that records one is refused without
it, saying what it asked for and how to allow it. A model the manifest names as
``FILE.py:FACTORY`` (code) is refused the same way. The bundle is a copy of a session bundle
whose manifest is edited; the module it names creates a marker file when imported.
"""

from __future__ import annotations

import hashlib
import json
import shutil

from tests.conftest import run_cli

PIPELINE = """\
import pathlib
pathlib.Path({marker!r}).touch()  # runs on import


def pipeline(target):
    from tvm import relax
    return relax.backend.cpu_generic.get_default_pipeline(target)
"""


def _shared_bundle(bundles, gt_model, tmp_path, edit):
    """A copy of the session's c bundle of the ground-truth model, its manifest edited."""
    copy = tmp_path / "shared.bundle"
    shutil.copytree(bundles.get(gt_model, "c"), copy)
    manifest = json.loads((copy / "manifest.json").read_text())
    edit(manifest)
    (copy / "manifest.json").write_text(json.dumps(manifest))
    return copy


def _one_error(proc) -> str:
    errors = [ln for ln in proc.stderr.splitlines() if ln.startswith("tvm-explorer: error:")]
    assert proc.returncode == 2, proc.stderr
    assert len(errors) == 1 and "Traceback" not in proc.stderr, proc.stderr
    return errors[0]


def test_the_manifests_pipeline_is_not_imported(bundles, gt_model, tmp_path):
    marker = tmp_path / "PIPELINE-RAN"
    tune = tmp_path / "tune.py"
    tune.write_text(PIPELINE.format(marker=str(marker)))
    spec = f"{tune}:pipeline"
    bundle = _shared_bundle(bundles, gt_model, tmp_path, lambda m: m["options"].update(pipeline=spec))
    before = (bundle / "manifest.json").read_bytes()
    error = _one_error(run_cli("profile", bundle, "--repeat", 1, "--progress", "none"))
    assert f"{bundle}: its manifest says it was compiled with the Relax pipeline {spec!r}" in error, error
    assert f"name it yourself: --pipeline {spec}" in error, error
    assert not marker.exists(), "profile imported the pipeline the bundle named"
    assert (bundle / "manifest.json").read_bytes() == before

    # Named by the user, it is the user's code: imported, and the bundle measured again.
    proc = run_cli("profile", bundle, "--repeat", 1, "--progress", "none", "--pipeline", spec)
    assert proc.returncode == 0, proc.stderr
    assert marker.exists()
    manifest = json.loads((bundle / "manifest.json").read_text())
    assert manifest["options"]["pipeline"] == spec
    assert json.loads((bundle / "costs.json").read_text())["profile"]["status"] == "measured"


def test_a_hostile_pipeline_text_is_shown_escaped(bundles, gt_model, tmp_path):
    spec = "x\x1b[2J; rm -rf ~:f"  # not a MODULE:FUNCTION: shown escaped, never offered as the flag
    bundle = _shared_bundle(bundles, gt_model, tmp_path, lambda m: m["options"].update(pipeline=spec))
    error = _one_error(run_cli("profile", bundle, "--progress", "none"))
    assert "\x1b" not in error and "'x\\x1b[2J; rm -rf ~:f'" in error, error
    assert "--pipeline MODULE:FUNCTION" in error, error


def test_a_factory_the_manifest_names_is_not_run(bundles, gt_model, tmp_path):
    """``FILE.py:FACTORY`` is code: a manifest naming one (beside a file literally called so,
    with the recorded SHA-256) would have made profile import FILE.py."""
    marker = tmp_path / "FACTORY-RAN"
    (tmp_path / "evil.py").write_text(f"import pathlib\npathlib.Path({str(marker)!r}).touch()\n")
    decoy = tmp_path / "evil.py:make"
    decoy.write_bytes(b"anything")
    digest = hashlib.sha256(b"anything").hexdigest()
    bundle = _shared_bundle(
        bundles, gt_model, tmp_path, lambda m: m["model"].update(path=str(decoy), sha256=digest, kind="nn")
    )
    error = _one_error(run_cli("profile", bundle, "--progress", "none"))
    assert f"its manifest names the model {str(decoy)!r}" in error and "--model" in error, error
    assert not marker.exists(), "profile imported the factory the bundle named"

"""The Python API records a compile that the user's own script runs."""

import tvm

from tvm_explorer import Capture
from tvm_explorer.bundle.reader import Bundle


def test_capture_context_manager_records_users_compile(gt_model, tmp_path):
    out = tmp_path / "mine.bundle"
    with Capture(gt_model, out) as cap:
        ex = tvm.compile(cap.module, tvm.target.Target("c"), relax_pipeline=cap.pipeline("c"))
        cap.add_executable(ex)
    b = Bundle(out)
    names = [p["name"] for p in b.manifest["passes"]]
    assert names[0] == "import" and "FuseOps" in names and "codegen (c)" in names
    assert all(p["attributed"] == p["units"] for p in b.manifest["passes"])
    assert b.document("code/module.c") is not None


def test_capture_writes_nothing_when_the_block_fails(gt_model, tmp_path):
    out = tmp_path / "failed.bundle"
    try:
        with Capture(gt_model, out) as cap:
            assert cap.module is not None
            raise RuntimeError("user code failed")
    except RuntimeError:
        pass
    assert list(tmp_path.iterdir()) == []

"""Issue 37, item 8: a device whose timer reports NaN, negative or absurdly large times. Before,
``profile`` said "Bundle written" (exit 0) and replaced a good ``costs.json`` with one the
tool itself then called damaged. Now the times are checked where they come in (finite, not
negative, no longer in all than asking for them took), the assembled section is checked with
the reader's own rules before it is written, and ``profile`` replaces a bundle only with a
measurement: otherwise one message, exit 7, the old bundle byte for byte.

The device is a real TVM RPC server (``lying_server.py``: TVM's own server loop) whose
``runtime.RPCTimeEvaluator`` is replaced in its process: the kernels run, their times lie."""

from __future__ import annotations

import math
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from tests.conftest import run_cli

from tvm_explorer.remote.measure import ImpossibleTimes, check_times

EXIT_REMOTE = 7


@pytest.mark.parametrize(
    "results, elapsed, said",
    [
        ([1e-3, math.nan], 1.0, "reported nan s for run 2 of 2 of kernel k: not a time"),
        ([-1.0], 1.0, "reported -1.0 s for run 1 of 1 of kernel k: not a time"),
        ([math.inf], 1.0, "reported inf s"),
        ([1e300, 1e300], 0.5, "reported 2e+300 s for 2 run(s) of kernel k, which took 0.5 s to ask for"),
        ([30.0], 2.0, "reported 30 s for 1 run(s) of kernel k, which took 2 s to ask for"),
    ],
)
def test_times_a_device_cannot_have_measured_are_refused(results, elapsed, said):
    with pytest.raises(ImpossibleTimes) as refused:
        check_times("device 127.0.0.1:9", "kernel k", results, elapsed)
    assert said in str(refused.value) and str(refused.value).startswith("device 127.0.0.1:9 ")


def test_real_times_pass():
    assert check_times("d", "k", [0.0, 1e-6, 0.2], 0.21) == [0.0, 1e-6, 0.2]


@pytest.fixture(scope="module")
def measured(bundles, small_dense):
    """small_dense compiled for llvm and profiled here: a good, measured costs.json."""
    return bundles.get(small_dense, "llvm", "--profile", "--repeat", "3")


@pytest.mark.parametrize(
    "value, said",
    [("nan", "reported nan s for run 1 of 3 of kernel"), ("1e300", "reported 3e+300 s for 3 run(s) of kernel")],
)
def test_profile_on_a_lying_device_keeps_the_good_costs(measured, tmp_path, value, said):
    bundle = tmp_path / "kept.bundle"
    shutil.copytree(measured, bundle)
    before = {p.name: p.read_bytes() for p in bundle.iterdir() if p.is_file()}
    server = subprocess.Popen(
        [sys.executable, str(Path(__file__).with_name("lying_server.py")), value],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    try:
        port = int(server.stdout.readline())
        proc = run_cli("profile", bundle, "--repeat", 3, "--rpc", f"127.0.0.1:{port}", "--rpc-timeout", 60)
    finally:
        server.kill()
        server.wait()
    err = proc.stderr.strip()
    assert proc.returncode == EXIT_REMOTE, (proc.stdout, err)
    assert err.count("\n") == 0 and f"device 127.0.0.1:{port}" in err and said in err, err
    assert "previous bundle is unchanged (its costs.json kept)" in err, err
    assert "Bundle written" not in proc.stdout
    assert {p.name: p.read_bytes() for p in bundle.iterdir() if p.is_file()} == before
    assert run_cli("costs", bundle).returncode == 0  # still the good one, and readable

"""Profiling on devices through a real TVM RPC tracker and servers on loopback: the direct
and the tracker path, several devices, where each figure was measured as the CLI and the
editor say it, and the faults (a lost device, a key without devices, an unreachable tracker,
a library for another architecture, a missing cross compiler) — each one message, exit
code 6, the previous bundle intact."""

from __future__ import annotations

import json
import shutil
import time
from pathlib import Path

import pytest
from tests.conftest import CLI, run_cli
from tests.costs.conftest import check_times
from tests.remote import rpc_pool
from tests.remote.conftest import KEY, compile_profiled

EXIT_REMOTE = 7


def costs_of(bundle: Path) -> dict:
    return json.loads((bundle / "costs.json").read_text())


def snapshot(bundle: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in (bundle / "manifest.json", bundle / "costs.json")}


def test_profile_through_one_rpc_server(remote_bundle, pool):
    bundle, stdout = remote_bundle
    costs = costs_of(bundle)
    check_times(costs, plain_factor=None)  # the same join through fusion as here
    profile = costs["profile"]
    assert profile["where"] == "remote" and profile["clock"] == "device_timer"
    remote = profile["remote"]
    assert remote["via"] == "rpc" and remote["address"] == pool.direct_address and remote["key"] is None
    (device,) = remote["devices"]
    assert device["address"] == pool.direct_address
    assert device["triple"].startswith("x86_64") and device["cpu"] and device["threads"] >= 1
    assert f"measured on {device['cpu']} ({pool.direct_address})" in stdout
    table = run_cli("costs", bundle, check=True).stdout
    assert f"Measured on {device['cpu']} ({pool.direct_address})" in table
    assert f"device {pool.direct_address}: {device['description']}" in table
    check_numerics(bundle, f"{device['description']} ({pool.direct_address})")


def check_numerics(bundle: Path, ran_on: str) -> None:
    """The model ran on the device, the reference here: the dense layer's output is observed
    and matches LiteRT's (the device computes what this machine would)."""
    data = json.loads((bundle / "numerics.json").read_text())
    assert data["ran_on"] == ran_on
    by_name = {e["name"]: e for e in data["layers"]}
    assert by_name["probs/output"]["observed"] and data["first_divergence"] is None, data
    assert by_name["probs/output"]["max_abs"] < 1e-5
    assert f"the model ran on {ran_on}" in run_cli("numerics", bundle, check=True).stdout


def test_profile_bundle_on_two_devices_of_a_key(tracker_bundle, pool):
    bundle, stdout = tracker_bundle
    costs = costs_of(bundle)
    check_times(costs, plain_factor=None)
    remote = costs["profile"]["remote"]
    assert remote["via"] == "tracker" and remote["key"] == KEY and remote["combined"] == "median"
    addresses = {d["address"] for d in remote["devices"]}
    assert len(addresses) == 2 and pool.direct_address not in addresses
    assert len(costs["profile"]["device_total_ms"]) == 2
    for lay in costs["layers"]:
        times = lay["device_time_ms"]
        assert len(times) == 2 and min(times) <= lay["time_ms"] <= max(times) + 1e-3
    cpu = remote["devices"][0]["cpu"]
    ran_on = json.loads((bundle / "numerics.json").read_text())["ran_on"]
    assert ran_on.endswith(f", key {KEY})") and any(d["address"] in ran_on for d in remote["devices"])
    said = f"measured on {cpu} (key {KEY}), median of 2 devices"
    assert said in stdout
    assert said[0].upper() + said[1:] in run_cli("costs", bundle, check=True).stdout


def test_a_key_without_devices_is_said_within_the_timeout(remote_bundle, pool, tmp_path):
    bundle = tmp_path / "kept.bundle"
    shutil.copytree(remote_bundle[0], bundle)
    before = snapshot(bundle)
    started = time.monotonic()
    proc = run_cli(
        "profile", bundle, "--rpc-tracker", pool.tracker_address, "--rpc-key", "no-such-board", "--rpc-timeout", 2
    )
    assert proc.returncode == EXIT_REMOTE, proc.stderr
    assert time.monotonic() - started < 120  # the rebuild, then 2 s of waiting: never a hang
    err = proc.stderr.strip()
    assert err.count("\n") == 0, err  # one message
    assert "no device of key 'no-such-board' became free within 2 s" in err
    assert f"no device is registered with that key (keys with devices: {KEY})" in err
    assert snapshot(bundle) == before


def test_an_unreachable_tracker_and_a_missing_cross_compiler(small_dense, tmp_path):
    closed = rpc_pool.free_port()
    proc = compile_profiled(
        small_dense, tmp_path / "x.bundle", "llvm", "--rpc-tracker", f"127.0.0.1:{closed}", "--rpc-key", KEY
    )
    assert proc.returncode == EXIT_REMOTE
    assert f"cannot reach the RPC tracker at 127.0.0.1:{closed}" in proc.stderr
    proc = compile_profiled(
        small_dense, tmp_path / "x.bundle", "llvm -mtriple=riscv64-unknown-linux-gnu", "--rpc", f"127.0.0.1:{closed}"
    )
    assert proc.returncode == EXIT_REMOTE
    assert "no C cross compiler for riscv64-unknown-linux-gnu" in proc.stderr and "--cc PATH" in proc.stderr
    assert not (tmp_path / "x.bundle").exists()


def test_a_host_name_idna_cannot_encode_is_one_message():
    # a label over 63 characters: Python raises UnicodeError (no strerror) before any lookup
    from tvm_explorer.errors import RemoteError
    from tvm_explorer.remote.devices import _reachable

    with pytest.raises(RemoteError, match=r"cannot reach the RPC tracker \(encoding with 'idna'"):
        _reachable("a" * 70 + ".example", 9190, 1.0, "the RPC tracker")


def test_a_device_lost_mid_run_leaves_the_bundle(remote_bundle, tmp_path):
    bundle = tmp_path / "kept.bundle"
    shutil.copytree(remote_bundle[0], bundle)
    before = snapshot(bundle)
    log_path = tmp_path / "server.log"
    with open(log_path, "wb") as log:
        server, port = rpc_pool.spawn_server(log=log)
    try:
        rpc_pool.wait_port(port)
        import subprocess

        run = subprocess.Popen(
            [
                *CLI,
                "profile",
                str(bundle),
                "--repeat",
                "30000",
                "--rpc",
                f"127.0.0.1:{port}",
            ],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        deadline = time.monotonic() + 300
        while b"load_module" not in log_path.read_bytes() and time.monotonic() < deadline and run.poll() is None:
            time.sleep(0.05)
        time.sleep(0.3)
        rpc_pool.stop(server)  # the device goes away while its kernels are being timed
        _out, err = run.communicate(timeout=300)
    finally:
        rpc_pool.stop(server)
    assert run.returncode == EXIT_REMOTE, err
    assert f"lost 1 of 1 device(s) while measuring (device 127.0.0.1:{port}:" in err
    assert "nothing was recorded and the previous bundle is unchanged" in err
    assert snapshot(bundle) == before


def test_cross_compiling_for_aarch64(small_dense, pool, tmp_path):
    """The library is built by the aarch64 cross compiler (an aarch64 ELF, read from its
    header); this machine's x86_64 server is then refused before anything is uploaded."""
    from tvm_explorer.app.compile import compile_model
    from tvm_explorer.remote.cross import resolve
    from tvm_explorer.remote.measure import export

    for target, cc in (("llvm -mtriple=aarch64-linux-gnu", None), ("c", "aarch64-linux-gnu-gcc")):
        compiler, triple = resolve(target, cc)
        assert compiler and Path(compiler).name == "aarch64-linux-gnu-gcc", "apt-get install gcc-aarch64-linux-gnu"
        executable = compile_model(small_dense, None, target).executable
        work = tmp_path / target.split()[0]
        work.mkdir()
        for lib in export(executable, str(work), compiler, target == "c", triple):
            head = Path(lib).read_bytes()[:20]
            assert head[:4] == b"\x7fELF" and head[16] == 3  # a shared object
            assert int.from_bytes(head[18:20], "little") == 183, lib  # EM_AARCH64

    out = tmp_path / "arm.bundle"
    proc = compile_profiled(small_dense, out, "llvm -mtriple=aarch64-linux-gnu", "--rpc", pool.direct_address)
    assert proc.returncode == EXIT_REMOTE, proc.stderr
    assert f"device {pool.direct_address} is x86_64" in proc.stderr
    assert "the library was built for aarch64" in proc.stderr and "-mtriple=x86_64" in proc.stderr
    assert not out.exists()


@pytest.mark.parametrize(
    "flags, said",
    [
        (["--rpc", "127.0.0.1:1", "--rpc-tracker", "127.0.0.1:2"], "give one"),
        (["--rpc-tracker", "127.0.0.1:2"], "needs --rpc-key"),
        (["--rpc", "127.0.0.1:1", "--devices", "2"], "needs --rpc-tracker"),
        (["--rpc", "nohost"], "expected HOST:PORT"),
    ],
)
def test_bad_remote_flags_are_refused_before_compiling(small_dense, tmp_path, flags, said):
    proc = run_cli("compile", small_dense, "-o", tmp_path / "x.bundle", "--profile", *flags)
    assert proc.returncode == 2 and said in proc.stderr and "Traceback" not in proc.stderr


def test_a_failed_build_is_named_by_the_compilers_own_line(tmp_path):
    """TVM's "Compilation error:" is a heading: the reason given is the compiler's line below
    it (a missing crti.o of a cross compiler without its C library was reported as nothing)."""
    from tvm.support import cc

    from tvm_explorer.remote.devices import reason

    source = tmp_path / "broken.c"
    source.write_text("int f(void) { return 1 }\n")
    with pytest.raises(Exception) as failed:
        cc.create_shared(str(tmp_path / "broken.so"), [str(source)])
    said = reason(failed.value)
    assert "broken.c" in said and "error" in said and not said.endswith(":"), said

"""A real TVM RPC pool on loopback for the session: a tracker with two servers of key
``board-a``, and one server on its own (``--rpc``); killed at the end."""

from __future__ import annotations

import shutil
from dataclasses import dataclass

import pytest
from tests.conftest import run_cli
from tests.costs.conftest import dominant_dense
from tests.remote import rpc_pool

KEY = "board-a"


def compile_profiled(model, out, target, *options, timeout=900):
    """``compile MODEL -o OUT --target TARGET --profile OPTIONS``: the remote options say where."""
    return run_cli("compile", model, "-o", out, "--target", target, "--profile", *options, timeout=timeout)


@dataclass
class Pool:
    tracker: int
    direct: int  # the port of the server on its own

    @property
    def tracker_address(self) -> str:
        return f"127.0.0.1:{self.tracker}"

    @property
    def direct_address(self) -> str:
        return f"127.0.0.1:{self.direct}"


@pytest.fixture(scope="session")
def pool():
    tracker, port = rpc_pool.start_tracker()
    # Started together: each server takes seconds to import TVM.
    servers = [rpc_pool.spawn_server(port, KEY), rpc_pool.spawn_server(port, KEY), rpc_pool.spawn_server()]
    try:
        for _proc, server_port in servers:
            rpc_pool.wait_port(server_port)
        rpc_pool.wait_free(port, KEY, 2)
        yield Pool(port, servers[2][1])
    finally:
        for proc, _ in servers:
            rpc_pool.stop(proc)
        rpc_pool.stop(tracker)


@pytest.fixture(scope="session")
def small_dense(tmp_path_factory):
    """The dominant-dense graph at 256 wide: a FULLY_CONNECTED that dominates, in microseconds."""
    return dominant_dense(tmp_path_factory.mktemp("remote-models") / "dense256.tflite", width=256)


@pytest.fixture(scope="session")
def remote_bundle(pool, small_dense, tmp_path_factory):
    """``small_dense`` compiled for llvm, profiled and checked (numerics) on the ``--rpc`` server."""
    out = tmp_path_factory.mktemp("remote-bundles") / "dense256.bundle"
    proc = compile_profiled(small_dense, out, "llvm", "--repeat", 3, "--numerics", "--rpc", pool.direct_address)
    assert proc.returncode == 0, proc.stderr
    return out, proc.stdout


@pytest.fixture(scope="session")
def tracker_bundle(remote_bundle, pool, tmp_path_factory):
    """``remote_bundle`` measured again (``tvm-explorer profile``) on the two devices of
    ``board-a``, with numerics; in a folder of its own (a workspace for the language server)."""
    folder = tmp_path_factory.mktemp("remote-ws")
    bundle = folder / "two.bundle"
    shutil.copytree(remote_bundle[0], bundle)
    proc = run_cli(
        "profile",
        bundle,
        "--repeat",
        3,
        "--rpc-tracker",
        pool.tracker_address,
        "--rpc-key",
        KEY,
        "--devices",
        2,
        "--numerics",
    )
    assert proc.returncode == 0, proc.stderr
    return bundle, proc.stdout

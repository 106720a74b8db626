"""Interrupts, timeouts and crashes of `tvm-explorer compile` in real subprocesses: the
previous bundle stays intact (or, if the interrupt came after the commit, the new one is
complete), exactly one message, and no temporary directory is left behind."""

from __future__ import annotations

import hashlib
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import CLI, run_cli
from processes import gone
from tvm_explorer.bundle.reader import Bundle

HARNESS = Path(__file__).resolve().parents[1] / "cli_harness.py"


def tree(root: Path) -> dict[str, str]:
    """Every file of a directory with its content hash."""
    return {
        p.relative_to(root).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


@pytest.fixture(scope="module")
def previous(tmp_path_factory, models_dir) -> Path:
    """A good bundle of a different model: what an interrupted recompile must leave alone."""
    out = tmp_path_factory.mktemp("prev") / "b"
    run_cli("compile", models_dir / "sine_float.tflite", "-o", out, check=True)
    return out


def start(tmp_path: Path, mode: str, model: Path, *extra: str, env=None) -> tuple:
    out = tmp_path / "b"
    marker = tmp_path / "reached"
    cmd = [sys.executable, str(HARNESS), mode, str(marker), "--", "compile", str(model), "-o", str(out), *extra]
    # Signals at their defaults, whatever this run inherited (under nohup SIGHUP is ignored,
    # and the child killed "from outside" with it would sleep on).
    proc = subprocess.Popen(
        cmd,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, **(env or {})},
        preexec_fn=_default_signals,
    )
    return proc, out, marker


def _default_signals() -> None:
    for sig in (signal.SIGHUP, signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, signal.SIG_DFL)


def wait_for(marker: Path, proc, timeout: float = 120.0) -> None:
    deadline = time.monotonic() + timeout
    while not marker.exists():
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < deadline, "the harness never reached its point"
        time.sleep(0.05)


def wait_for_fork(proc, timeout: float = 60.0) -> None:
    """Wait until the CLI has forked its compiling child."""
    children = Path(f"/proc/{proc.pid}/task/{proc.pid}/children")
    deadline = time.monotonic() + timeout
    while not children.read_text().split():
        assert proc.poll() is None and time.monotonic() < deadline
        time.sleep(0.01)


def one_error(stderr: str) -> str:
    lines = [line for line in stderr.strip().split("\n") if line and "Warning" not in line]
    assert len(lines) == 1 and lines[0].startswith("tvm-explorer: error: "), stderr
    assert "Traceback" not in stderr
    return lines[0]


def no_leftovers(out: Path) -> None:
    assert not [p.name for p in out.parent.iterdir() if p.name.startswith(f".{out.name}.")]


@pytest.mark.parametrize(
    "point,sig",
    [
        ("load", signal.SIGINT),
        ("build", signal.SIGTERM),
        ("document", signal.SIGTERM),
        ("document", signal.SIGINT),
        ("swap", signal.SIGTERM),
        ("finished", signal.SIGINT),
        ("finished", signal.SIGTERM),
    ],
)
def test_interrupt_at_several_moments(tmp_path, models_dir, previous, point, sig):
    proc, out, marker = start(tmp_path, f"pause-{point}", models_dir / "small_cnn_fp32.tflite")
    shutil.copytree(previous, out)
    before = tree(out)
    wait_for(marker, proc)
    proc.send_signal(sig)
    _, stderr = proc.communicate(timeout=120)
    assert proc.returncode == 130, stderr
    message = one_error(stderr)
    assert f"interrupted ({sig.name})" in message
    if point in ("swap", "finished"):
        # Too late to stop: the commit finishes, and the message says the bundle is complete.
        assert "is complete" in message
        assert Bundle(out).manifest["model"]["file"] == "small_cnn_fp32.tflite"
    else:
        assert "a previous bundle is unchanged" in message
        assert tree(out) == before
    Bundle(out).preload()
    no_leftovers(out)


def test_interrupt_with_nothing_before_leaves_nothing(tmp_path, models_dir):
    proc, out, marker = start(tmp_path, "pause-document", models_dir / "sine_float.tflite")
    wait_for(marker, proc)
    proc.send_signal(signal.SIGINT)
    _, stderr = proc.communicate(timeout=120)
    assert proc.returncode == 130 and "no bundle was written" in one_error(stderr)
    assert not out.exists()
    no_leftovers(out)


def test_signals_at_random_moments_of_a_real_compile(tmp_path, models_dir, previous):
    """No harness: the real CLI, SIGTERM or SIGINT after a delay spread over a compile."""
    outcomes = []
    for i, delay in enumerate((0.0, 0.3, 0.6, 0.9, 1.2, 1.6)):
        out = tmp_path / f"b{i}"
        shutil.copytree(previous, out)
        before = tree(out)
        proc = subprocess.Popen(
            [
                *CLI,
                "compile",
                str(models_dir / "small_cnn_fp32.tflite"),
                "-o",
                str(out),
            ],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        wait_for_fork(proc)  # from here on the CLI owns its signals
        time.sleep(delay)
        proc.send_signal(signal.SIGTERM if i % 2 else signal.SIGINT)
        _, stderr = proc.communicate(timeout=120)
        if proc.returncode == 0:  # finished before the signal
            assert Bundle(out).manifest["model"]["file"] == "small_cnn_fp32.tflite"
        else:
            assert proc.returncode == 130, stderr
            message = one_error(stderr)
            if "is complete" in message:
                assert Bundle(out).manifest["model"]["file"] == "small_cnn_fp32.tflite"
            else:
                assert tree(out) == before
        Bundle(out).preload()
        no_leftovers(out)
        outcomes.append(proc.returncode)
    assert 130 in outcomes


def test_tvm_crash_is_reported_and_keeps_the_previous_bundle(tmp_path, models_dir, previous):
    """A real segfault inside TVM (a null IRModule's method) in the compiling child."""
    proc, out, _ = start(tmp_path, "segv", models_dir / "small_cnn_fp32.tflite")
    shutil.copytree(previous, out)
    before = tree(out)
    _, stderr = proc.communicate(timeout=120)
    assert proc.returncode == 3, stderr
    message = one_error(stderr)
    assert "small_cnn_fp32.tflite: TVM crashed (SIGSEGV) while compiling for c" in message
    assert tree(out) == before
    report = Path(message.rsplit("TVM's crash report: ", 1)[1])
    assert "Segfault" in report.read_text()
    report.unlink()
    no_leftovers(out)


def test_a_stop_arriving_in_an_at_fork_callback_still_stops_the_compile(tmp_path, models_dir):
    """CI: SIGTERM landed in logging's after-fork callback while a printer forked; Python
    printed the lost KeyboardInterrupt as a traceback beside the one message."""
    proc, out, _ = start(tmp_path, "term-at-fork", models_dir / "sine_float.tflite")
    _, stderr = proc.communicate(timeout=120)
    assert proc.returncode == 130, stderr
    assert "interrupted (SIGTERM); no bundle was written" in one_error(stderr)
    assert not out.exists()
    no_leftovers(out)


def test_timeout_stops_a_compile_that_ignores_signals(tmp_path, models_dir, previous):
    proc, out, _ = start(
        tmp_path, "hang", models_dir / "sine_float.tflite", "--timeout", "2", env={"TVMX_HARNESS_GRACE": "1"}
    )
    shutil.copytree(previous, out)
    before = tree(out)
    t0 = time.monotonic()
    _, stderr = proc.communicate(timeout=120)
    assert proc.returncode == 4, stderr
    assert "did not finish within 2 s (--timeout) and was killed" in one_error(stderr)
    assert time.monotonic() - t0 < 60
    assert tree(out) == before
    no_leftovers(out)


def test_timeout_of_a_compile_that_can_stop_itself(tmp_path, models_dir):
    proc, out, _ = start(tmp_path, "sleep", models_dir / "sine_float.tflite", "--timeout", "2")
    _, stderr = proc.communicate(timeout=120)
    assert proc.returncode == 4, stderr
    message = one_error(stderr)
    assert "did not finish within 2 s (--timeout); no bundle was written" in message
    assert not out.exists()
    no_leftovers(out)


def test_sigterm_to_a_stuck_compile_stops_it_at_once(tmp_path, models_dir):
    """A compile that takes no signal (C++ that never returns to Python) is stopped by the
    CLI as soon as the stop is claimed, not after the 10 s grace a commit gets."""
    proc, out, marker = start(tmp_path, "hang", models_dir / "sine_float.tflite")
    wait_for(marker, proc)
    child = int(marker.read_text())
    proc.send_signal(signal.SIGTERM)
    assert child_gone_within(child, 5.0)
    _, stderr = proc.communicate(timeout=60)
    assert proc.returncode == 130
    assert "interrupted (SIGTERM), stopped within 0.25 s; no bundle was written" in one_error(stderr)
    assert not out.exists()
    no_leftovers(out)


def child_gone_within(child: int, bound: float) -> bool:
    """Wait up to ``bound`` seconds for ``child`` to exit (a generous bound: the goal is one
    second, and bench/ measures it); kill it if it does not, so no process is left behind."""
    t0 = time.monotonic()
    while not gone(child):
        if time.monotonic() - t0 > bound:
            os.kill(child, signal.SIGKILL)
            return False
        time.sleep(0.01)
    return True


@pytest.fixture(scope="module")
def constant_chain(tmp_path_factory) -> Path:
    """tflite_builder.constant_chain of 120 ops: its FoldConstant runs for many seconds (~20 s
    on the 2-core test machine under load, a few seconds on a fast one)."""
    from tests.tflite_builder import constant_chain

    path = tmp_path_factory.mktemp("chain") / "chain.tflite"
    constant_chain(path, 120)
    return path


@pytest.mark.parametrize(
    "model,stage,name,delay",
    [
        ("small_cnn_fp32.tflite", "relax", "LegalizeOps", 0.0),  # between passes
        ("chain", "relax", "FoldConstant", 1.0),  # inside a pass that runs for seconds in C++
        ("small_cnn_fp32.tflite", "code", None, 0.0),  # printing the IR of every pass
    ],
)
def test_a_stop_ends_the_compile_at_once_at_any_point(
    tmp_path, request, models_dir, previous, model, stage, name, delay
):
    """Issue 38: after SIGTERM the compiling child ran ~80 more passes and was killed at the
    10 s grace (the editor's Cancel even let it write its bundle). The real CLI, its progress
    read as the editor reads it, SIGTERM at a pass: the child is gone at once, the previous
    bundle byte-identical, one message."""
    import json

    out = tmp_path / "b"
    shutil.copytree(previous, out)
    before = tree(out)
    path = request.getfixturevalue("constant_chain") if model == "chain" else models_dir / model
    proc = subprocess.Popen(
        [sys.executable, "-m", "tvm_explorer", "compile", str(path), "-o", str(out), "--progress", "json"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    wait_for_fork(proc)
    child = int(Path(f"/proc/{proc.pid}/task/{proc.pid}/children").read_text().split()[0])
    for line in proc.stdout:
        event = json.loads(line) if line.startswith("{") else {}
        if event.get("event") == "start" and event["stage"] == stage and name in (None, event["name"]):
            break
    else:
        pytest.fail(f"no {stage} {name} step: {proc.communicate()}")
    time.sleep(delay)
    proc.send_signal(signal.SIGTERM)
    assert child_gone_within(child, 5.0), f"the child outlived SIGTERM at {stage} {name} by 5 s"
    _, stderr = proc.communicate(timeout=60)
    assert proc.returncode == 130, stderr
    message = one_error(stderr)
    assert "interrupted (SIGTERM)" in message and "a previous bundle is unchanged" in message, message
    assert tree(out) == before
    no_leftovers(out)


def test_stale_temporary_directories_of_killed_compiles_are_removed(tmp_path, models_dir):
    out = tmp_path / "b"
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    stale = tmp_path / f".b.tmp-{dead.pid}"
    (stale / "relax").mkdir(parents=True)
    alive = tmp_path / f".b.tmp-{os.getpid()}"  # a compile still running: left alone
    alive.mkdir()
    run_cli("compile", models_dir / "sine_float.tflite", "-o", out, check=True)
    assert not stale.exists() and alive.exists()


def test_memory_limit_turns_runaway_allocation_into_a_message(tmp_path):
    """BROADCAST_TO of a constant to 400M x 4 floats: constant folding would materialise
    6.4 GB. Under a 3 GiB limit TVM's allocation fails and the user gets one message."""
    import numpy as np
    from tests import tflite_builder as B

    g = B.GraphBuilder()
    x = g.input("input", [1, 4])
    src = g.const("src", np.ones((1, 4), dtype=np.float32))
    shape = g.const("shape", np.array([400_000_000, 4], dtype=np.int32))
    big = g._op("BROADCAST_TO", [src, shape], "big", [1, 4])
    g.output(g.add(x, big, name="add"))
    model = tmp_path / "runaway.tflite"
    model.write_bytes(g.build())
    out = tmp_path / "b"
    proc = run_cli("compile", model, "-o", out, "--memory-limit", "3", timeout=300)
    assert proc.returncode == 2, proc.stderr
    message = one_error(proc.stderr)
    assert "runaway.tflite" in message and "ran out of memory" in message and "--memory-limit" in message
    assert not out.exists()
    no_leftovers(out)


def kill_cli_and_wait_for_child(proc, child: int, timeout: float) -> None:
    """SIGKILL the CLI; assert its compiling child is gone within ``timeout`` seconds (and
    kill a child that is not, so that a failing test leaves no process behind)."""
    proc.kill()
    proc.wait(timeout=30)  # not communicate(): a surviving child would hold the pipes open
    t0 = time.monotonic()
    try:
        while not gone(child):
            assert time.monotonic() - t0 < timeout, f"compiling child {child} outlived its CLI by {timeout} s"
            time.sleep(0.05)
    finally:
        if not gone(child):
            os.kill(child, signal.SIGKILL)
        proc.stdout.close()
        proc.stderr.close()


@pytest.mark.parametrize(
    "mode,env,bound",
    [
        # Python code running (the death signal stops it like an interrupt, cleaning up).
        ("pause-build", {"TVMX_HARNESS_PAUSE": "4"}, 10.0),
        # Stop signals blocked, as in C++ that never returns: the watchdog kills it after GRACE.
        ("hang", {"TVMX_HARNESS_GRACE": "1"}, 15.0),
    ],
)
def test_kill_9_of_the_cli_stops_the_compile(tmp_path, models_dir, previous, mode, env, bound):
    """Issue 18: after `kill -9` of the CLI its child went on and replaced the bundle ~6 s
    later. Now it dies within a bounded time and the previous bundle stays as it was, also
    well after the moment the compile would have finished."""
    proc, out, marker = start(tmp_path, mode, models_dir / "sine_float.tflite", env=env)
    shutil.copytree(previous, out)
    before = tree(out)
    wait_for(marker, proc)
    child = int(marker.read_text())
    assert child != proc.pid
    kill_cli_and_wait_for_child(proc, child, bound)
    time.sleep(8)  # sine_float compiles in ~3 s after the pause: it would have committed by now
    assert tree(out) == before
    Bundle(out).preload()
    if mode != "hang":  # killed outright, the hung one leaves its temporary directory
        no_leftovers(out)  # to the next compile (test_stale_temporary_directories_...)


def test_a_compile_orphaned_during_its_commit_does_not_commit(tmp_path, models_dir, previous):
    """`kill -9` of the CLI while the child is about to swap (stop signals blocked): the
    check right before the swap sees the CLI gone and the previous bundle stays."""
    proc, out, marker = start(
        tmp_path, "pause-swap", models_dir / "small_cnn_fp32.tflite", env={"TVMX_HARNESS_PAUSE": "2"}
    )
    shutil.copytree(previous, out)
    before = tree(out)
    wait_for(marker, proc)
    child = int(marker.read_text())
    kill_cli_and_wait_for_child(proc, child, 15.0)
    assert tree(out) == before
    assert Bundle(out).manifest["model"]["file"] == "sine_float.tflite"
    no_leftovers(out)


@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGHUP])
def test_a_child_killed_from_outside_is_not_called_a_tvm_crash(tmp_path, models_dir, previous, sig):
    """The OOM killer (or a user) kills the compiling child: the message says so, instead of
    "TVM crashed (SIGKILL)"."""
    proc, out, marker = start(tmp_path, "sleep", models_dir / "sine_float.tflite")
    shutil.copytree(previous, out)
    before = tree(out)
    wait_for(marker, proc)
    os.kill(int(marker.read_text()), sig)
    _, stderr = proc.communicate(timeout=60)
    assert proc.returncode == 3, stderr
    message = one_error(stderr)
    assert (
        f"sine_float.tflite: the compiling process was killed by {sig.name}, a signal from outside tvm-explorer"
        in message
    )
    assert "TVM crashed" not in message
    assert ("out-of-memory killer" in message) == (sig == signal.SIGKILL)
    assert tree(out) == before
    no_leftovers(out)

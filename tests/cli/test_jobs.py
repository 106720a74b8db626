"""Commands as typed jobs (issue 44 item 1): the command line is parsed into a job in ``cli/``,
the shared run options are checked alike in every command, ``supervise`` runs a body under
limits, and ``profile`` builds its CompileJob from the bundle's manifest. No compile of its own:
the one bundle read is the session's shared one."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

from tvm_explorer.app.jobs import CompileJob, MeasureOptions, ProfileJob, RunLimits
from tvm_explorer.cli.entry import build_parser

COMMANDS = {
    "compile": ["compile", "m.tflite", "-o", "out"],
    "profile": ["profile", "bundle"],
    "bisect": ["bisect", "m.tflite"],
    "reduce": ["reduce", "m.tflite", "-o", "small.tflite"],
}


def _refusal(argv: list[str], capsys) -> str:
    with pytest.raises(SystemExit) as stop:
        build_parser().parse_args(argv)
    assert stop.value.code == 2
    return capsys.readouterr().err.strip().splitlines()[-1]


@pytest.mark.parametrize("command", sorted(COMMANDS))
@pytest.mark.parametrize("bad", ["-1", "nan", "soon"])
def test_every_command_checks_timeout_alike(command, bad, capsys):
    said = _refusal([*COMMANDS[command], "--timeout", bad], capsys)
    assert said == (
        f"tvm-explorer {command}: error: argument --timeout: {bad!r} is not a number of seconds (0: no timeout)"
    )


@pytest.mark.parametrize("command", ["compile", "profile", "reduce"])
def test_every_command_checks_memory_limit_alike(command, capsys):
    said = _refusal([*COMMANDS[command], "--memory-limit", "0.1"], capsys)
    assert said.startswith(f"tvm-explorer {command}: error: argument --memory-limit: 0.1 GiB is too small")


def test_compile_command_line_becomes_a_compile_job():
    from tvm_explorer.cli.compile import job_of
    from tvm_explorer.frontends.input_shapes import InputShape

    args = build_parser().parse_args(
        [
            "compile",
            "m.onnx",
            "-o",
            "out",
            "--target",
            "llvm",
            "--timeout",
            "7",
            "--memory-limit",
            "0",
            "--input-shape",
            "x=1,3",
            "--numerics-unfused",
            "--profile",
            "--repeat",
            "3",
            "--no-schedule-records",
        ]
    )
    job = job_of(args)
    assert job == CompileJob(
        model="m.onnx",
        output="out",
        target="llvm",
        limits=RunLimits(timeout=7.0, memory_limit=0.0),
        schedule_records=False,
        input_shapes=(InputShape("x", (1, 3)),),
        measure=MeasureOptions(profile=True, repeat=3, numerics=True, numerics_unfused=True),
    )


def test_profile_builds_its_compile_job_from_the_manifest(bundles, gt_model):
    from tvm_explorer.app.profile import rebuild_job
    from tvm_explorer.cli.profile import job_of

    bundle = bundles.get(gt_model, "c")
    args = build_parser().parse_args(["profile", str(bundle), "--timeout", "9", "--repeat", "2"])
    job = job_of(args)
    assert isinstance(job, ProfileJob) and job.measure.profile and job.measure.profile_required
    rebuild = rebuild_job(job)
    assert (rebuild.model, rebuild.output, rebuild.target) == (str(gt_model), str(bundle), "c")
    assert rebuild.limits.timeout == 9.0 and rebuild.measure == job.measure
    assert rebuild.pipeline is None and rebuild.fill_spans and not rebuild.in_process


def test_supervised_body_is_stopped_at_the_limit_and_named_by_its_work():
    """``run_supervised`` takes a body and limits: a body that never returns is stopped at the
    timeout with one message naming the work (in a process of its own: the supervisor sets
    the signal handlers of the process it runs in)."""
    script = textwrap.dedent(
        """
        import signal, sys, time
        from tvm_explorer.app.jobs import RunLimits
        from tvm_explorer.supervise.supervisor import Work, run_supervised

        def body():
            signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGUSR1})
            time.sleep(60)
            return 0

        work = Work(subject="m.tflite", target="llvm", activity=("bisect", "bisecting"))
        sys.exit(run_supervised(body, RunLimits(timeout=0.5), work))
        """
    )
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 4, proc.stderr
    assert proc.stderr.strip() == (
        "tvm-explorer: error: m.tflite: bisect did not finish within 0.5 s (--timeout) and was killed; "
        "no bundle was written (a previous bundle is unchanged)"
    )

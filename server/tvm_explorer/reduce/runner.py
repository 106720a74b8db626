"""Probes of ``reduce`` in child processes, several at once (``--jobs``), each with its own time
and memory limit, cached by the set of operators kept.

A probe is ``reduce/probe.py`` started with ``supervise.child_python`` (this interpreter, our
package, nothing from the working directory), its address space capped by
``supervise.memlimit`` inside the child; the parent kills it at ``--timeout`` and reads what it
said on stdout: the stage and the innermost pass running when it failed, crashed or hung.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from dataclasses import dataclass
from typing import BinaryIO

from tvm_explorer.errors import ModelError

_DESCRIPTIONS = {
    "error": "{error_class} during {stage}{where}: {message}",
    "crash": "crash ({signal}) during {stage}{where}",
    "hang": "hang (timeout) during {stage}{where}",
    "oom": "out of memory during {stage}{where}: {message}",
    "culprit": "results diverge after pass {pass_name} ({stage}); {message}",
    "diverge": "results diverge from the reference; {message}",
    "invalid": "no valid sub-model: {message}",
}
"""What ``Outcome.describe`` says of each kind of failure."""


@dataclass(frozen=True)
class Outcome:
    """What one probe did: ``ok``, ``error`` (TVM raised), ``crash`` (a signal), ``hang``
    (the timeout), ``oom`` (the memory limit), ``diverge`` (the numerics' first divergent layer
    is ``opcode``), ``culprit`` (bisect names a pass), or ``invalid`` (no valid sub-model)."""

    kind: str
    stage: str = ""
    error_class: str = ""
    message: str = ""
    pass_name: str | None = None
    signal: str = ""
    opcode: str | None = None

    @property
    def failed(self) -> bool:
        return self.kind in ("error", "crash", "hang", "oom", "culprit", "diverge")

    def describe(self) -> str:
        where = f" in pass {self.pass_name}" if self.pass_name else ""
        return _DESCRIPTIONS.get(self.kind, "no failure").format(where=where, **self.__dict__)


def signature(outcome: Outcome, until: str | None = None) -> tuple | None:
    """What "failing the same way" compares (docs/reduce.md): import and compile failures by
    stage, error class and the operator kind the message names (and for compile failures the
    innermost pass); crashes by signal, stage and pass; hangs by stage and pass; with
    ``--until culprit`` bisect naming the same pass, with ``--until diverge`` a divergence
    whose first divergent layer (against the reference engine, numerics/) is of the same kind."""
    if outcome.kind == "diverge":
        return ("diverge", outcome.opcode)
    if outcome.kind == "culprit":
        return ("culprit", outcome.pass_name, outcome.stage)
    if outcome.kind == "error":
        return ("error", outcome.stage, outcome.error_class, outcome.opcode, outcome.pass_name)
    if outcome.kind == "crash":
        return ("crash", outcome.signal, outcome.stage, outcome.pass_name)
    if outcome.kind in ("hang", "oom"):
        return (outcome.kind, outcome.stage, outcome.pass_name)
    return None


BISECTING = ("culprit",)
"""``--until`` modes whose probe is a bisect (``tvm-explorer bisect --json``)."""

_FAULTS = ("SIGSEGV", "SIGBUS", "SIGILL", "SIGFPE", "SIGABRT", "SIGSYS", "SIGTRAP")


class Prober:
    """Runs probes of sub-models of ``model`` (``kept`` sets of operator indices)."""

    def __init__(
        self, model, writer, workdir, *, target, pipeline, timeout, memory_limit, jobs, until=None, reference=None
    ):
        self.model = os.fspath(model)
        self.writer = writer
        self.workdir = workdir
        self.suffix = os.path.splitext(self.model)[1]
        # --until diverge --reference REF: each probe's reference is REF cut the same way
        self.reference = os.fspath(reference) if reference else None
        self.spec = {"target": target, "pipeline": pipeline, "memory_limit": memory_limit, "until": until}
        self.timeout = timeout
        self.jobs = max(1, jobs)
        self.cache: dict[frozenset, Outcome] = {}
        self.probes = 0
        self._n = 0
        self.live: dict = {}

    # -- one probe -------------------------------------------------------------------------
    def _start(self, kept: frozenset | None):
        self._n += 1
        base = os.path.join(self.workdir, f"probe{self._n}")
        path = self.model if kept is None else base + self.suffix
        if kept is not None:
            try:
                self.writer.write(self.model, sorted(kept), path)
            except ModelError as err:
                return Outcome("invalid", message=str(err))
            except Exception as err:  # noqa: BLE001 - a cut the format cannot express
                return Outcome("invalid", message=f"{type(err).__name__}: {err}")
        spec = {**self.spec, "model": path}
        if self.reference is not None:
            spec["reference"] = self.reference if kept is None else base + ".ref" + self.suffix
            if kept is not None:
                try:
                    self.writer.write(self.reference, sorted(kept), spec["reference"])
                except Exception as err:  # noqa: BLE001 - the reference cannot be cut this way
                    return Outcome("invalid", message=f"the reference: {type(err).__name__}: {err}")
        with open(base + ".json", "w", encoding="utf-8") as fh:
            json.dump(spec, fh)
        from tvm_explorer.supervise.child_python import python_module_command

        out_file = open(base + ".out", "wb")  # noqa: SIM115 - closed when the probe is read
        err_file = open(base + ".err", "wb")  # noqa: SIM115
        if self.spec.get("until") in BISECTING:
            # bisect's own command (its search, its thresholds), run in this child
            extra = ["--pipeline", self.spec["pipeline"]] if self.spec.get("pipeline") else []
            command = python_module_command(
                "tvm_explorer",
                "bisect",
                path,
                "--target",
                self.spec["target"],
                "--json",
                "--progress",
                "none",
                "--in-process",
                *extra,
            )
        else:
            command = python_module_command("tvm_explorer.reduce.probe", base + ".json")
        proc = subprocess.Popen(
            command,
            stdout=out_file,
            stderr=err_file,
            stdin=subprocess.DEVNULL,
            start_new_session=True,  # a Ctrl-C at the terminal is the parent's to handle
        )
        return _Running(proc, base, out_file, err_file, time.monotonic())

    def _finish(self, run: _Running, timed_out: bool) -> Outcome:
        run.out.close()
        run.err.close()
        lines = []
        with open(run.base + ".out", encoding="utf-8", errors="replace") as fh:
            for line in fh:
                try:
                    lines.append(json.loads(line))
                except ValueError:
                    continue
        if self.spec.get("until") in BISECTING and not timed_out and run.proc.returncode is not None:
            return self._bisected(run, lines)
        stage, passes, final = "load", [], None
        for item in lines:
            if "stage" in item and "outcome" not in item:
                stage = item["stage"]
            elif "enter" in item:
                passes.append(item["enter"])
            elif "leave" in item and passes:
                passes.pop()
            elif "outcome" in item:
                final = item
        self._remove_files(run)
        innermost = passes[-1] if passes else None
        if timed_out:
            return Outcome("hang", stage=stage, pass_name=innermost)
        code = run.proc.returncode
        if code is not None and code < 0:
            name = signal.Signals(-code).name
            if name in _FAULTS:
                return Outcome("crash", stage=stage, pass_name=innermost, signal=name)
            return Outcome("oom" if name == "SIGKILL" else "crash", stage=stage, pass_name=innermost, signal=name)
        if final is None:
            return Outcome("crash", stage=stage, pass_name=innermost, signal=f"exit {code}")
        kind = final["outcome"]
        if kind == "ok":
            return Outcome("ok", stage=final.get("stage", stage))
        message = final.get("message", "")
        return Outcome(
            kind,
            stage=final.get("stage", stage),
            error_class=final.get("error_class", ""),
            message=message,
            pass_name=final.get("pass_name"),
            opcode=final.get("opcode")
            or (self.writer.blamed_opcode(message) if final.get("stage") == "import" else None),
        )

    def _remove_files(self, run: _Running) -> None:
        """A finished probe's files (its output, messages, sub-models), never the model itself."""
        for ext in (".out", ".err", ".json", self.suffix, ".ref" + self.suffix):
            if run.base + ext != self.model:
                try:
                    os.unlink(run.base + ext)
                except OSError:
                    pass

    def _bisected(self, run: _Running, lines: list) -> Outcome:
        with open(run.base + ".out", encoding="utf-8", errors="replace") as fh:
            text = fh.read()
        with open(run.base + ".err", encoding="utf-8", errors="replace") as fh:
            err = fh.read().strip().splitlines()
        self._remove_files(run)
        code = run.proc.returncode
        if code < 0:
            return Outcome("crash", stage="bisect", signal=signal.Signals(-code).name)
        try:
            data = json.loads(text[text.index("{") :])
        except ValueError:
            return Outcome("error", stage="bisect", error_class="bisect", message=err[-1] if err else f"exit {code}")
        culprit = data.get("culprit")
        if not culprit:
            return Outcome("ok", stage="bisect", message=data.get("note") or "")
        layer = data.get("layer") or {}
        before, after = data.get("error_before"), data.get("error_after")
        return Outcome(
            "culprit",
            stage=culprit.get("stage", ""),
            pass_name=culprit.get("name"),
            opcode=layer.get("opcode"),
            message=f"max abs error {before} → {after}; first layer changed: {layer.get('opcode')} {layer.get('name', '')}",
        )

    # -- many ------------------------------------------------------------------------------
    def run(self, sets: list, stop_when=None) -> list[Outcome | None]:
        """Outcomes of ``sets`` (None: the model itself), ``jobs`` at a time, in order; once
        ``stop_when(outcome)`` holds for one, later sets not yet started are left (None)."""
        results: list[Outcome | None] = [None] * len(sets)
        pending = list(range(len(sets)))
        stop = False
        try:
            while pending or self.live:
                while pending and not stop and len(self.live) < self.jobs:
                    i = pending.pop(0)
                    key = sets[i]
                    if key is not None and key in self.cache:
                        results[i] = self.cache[key]
                        if stop_when and stop_when(results[i]):
                            stop = True
                        continue
                    started = self._start(key)
                    self.probes += 1
                    if isinstance(started, Outcome):
                        results[i] = self._remember(key, started)
                        continue
                    self.live[i] = started
                if stop:
                    pending = []
                time.sleep(0.05)
                now = time.monotonic()
                for i, run in list(self.live.items()):
                    timed_out = bool(self.timeout) and now - run.started > self.timeout
                    if timed_out:
                        _kill(run.proc)
                    if run.proc.poll() is None:
                        continue
                    del self.live[i]
                    results[i] = self._remember(sets[i], self._finish(run, timed_out))
                    if stop_when and stop_when(results[i]):
                        stop = True
                if stop:
                    # a later set found it too: the first in order decides, the rest stop
                    first = next((j for j, r in enumerate(results) if r is not None and stop_when(r)), None)
                    for j, run in list(self.live.items()):
                        if first is not None and j > first:
                            _kill(run.proc)
                            run.proc.wait()
                            del self.live[j]
                            self._finish(run, False)
        finally:
            self.stop_all()
        return results

    def _remember(self, key, outcome: Outcome) -> Outcome:
        if key is not None:
            self.cache[key] = outcome
        return outcome

    def stop_all(self) -> None:
        """Kill every probe still running (an interrupt, or the end)."""
        for run in self.live.values():
            _kill(run.proc)
            try:
                run.proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                pass
            run.out.close()
            run.err.close()
        self.live.clear()


@dataclass
class _Running:
    proc: subprocess.Popen
    base: str
    out: BinaryIO
    err: BinaryIO
    started: float


def _kill(proc: subprocess.Popen) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass

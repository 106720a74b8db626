"""Shared helpers of the benchmark scripts: A/B interleaving, paired ratios, fresh-process
workers, memory readings and tables. Not part of the installed package.

Machines here are noisy (2 cores shared with other jobs), so every comparison is measured
side by side in one run: the variants of one repetition run one after the other, in an order
that rotates from one repetition to the next, and each ratio is the median of the per-
repetition (paired) ratios, with their spread (min-max). Times are CPU time of the measuring
process (``time.process_time``: insensitive to other jobs' load) and wall time.
"""

from __future__ import annotations

import json
import os
import resource
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
MODELS = ROOT / "tests" / "models"
WORKER = BENCH / "_worker.py"


# -- statistics --------------------------------------------------------------------------
@dataclass
class Summary:
    """Median and spread of repeated measurements."""

    median: float
    low: float
    high: float
    n: int

    @classmethod
    def of(cls, values) -> Summary:
        vals = sorted(float(v) for v in values)
        if not vals:
            return cls(float("nan"), float("nan"), float("nan"), 0)
        return cls(statistics.median(vals), vals[0], vals[-1], len(vals))

    def fmt(self, digits: int = 2, unit: str = "") -> str:
        """``1.23 (1.10–1.40)``."""
        if self.n == 0:
            return "n/a"
        if self.n == 1:
            return f"{self.median:.{digits}f}{unit}"
        return f"{self.median:.{digits}f}{unit} ({self.low:.{digits}f}–{self.high:.{digits}f})"


def paired_ratios(base: list[float], other: list[float]) -> Summary:
    """Median and spread of ``other[i] / base[i]`` (measurements of one repetition)."""
    return Summary.of(o / b for b, o in zip(base, other) if b > 0)


def percentile(sorted_values: list[float], q: float) -> float:
    """The ``q`` quantile (0..1) of already sorted values (nearest rank)."""
    if not sorted_values:
        return float("nan")
    k = min(len(sorted_values) - 1, max(0, int(round(q * (len(sorted_values) - 1)))))
    return sorted_values[k]


def latency_summary(samples_ns: list[int]) -> dict:
    """p50 / p99 / max in milliseconds of request latencies given in nanoseconds."""
    vals = sorted(samples_ns)
    ms = 1e-6
    return {
        "n": len(vals),
        "p50": percentile(vals, 0.5) * ms,
        "p99": percentile(vals, 0.99) * ms,
        "max": (vals[-1] * ms) if vals else float("nan"),
        "mean": (sum(vals) / len(vals) * ms) if vals else float("nan"),
    }


def rotations(names: list[str], reps: int):
    """Yield ``(rep, order)``: every repetition runs all variants, in a rotating order, so
    that no variant always runs first (cold) or right after another one."""
    for rep in range(reps):
        k = rep % len(names)
        order = names[k:] + names[:k]
        if rep % 2:
            order = order[::-1]
        yield rep, order


# -- memory ------------------------------------------------------------------------------
def proc_status(pid: int | str = "self") -> dict[str, int]:
    """``VmRSS``, ``VmHWM`` ... of a process in bytes (from /proc; Linux only)."""
    out = {}
    try:
        with open(f"/proc/{pid}/status") as fh:
            for line in fh:
                key, _, rest = line.partition(":")
                if key.startswith("Vm") and rest.strip().endswith("kB"):
                    out[key] = int(rest.split()[0]) * 1024
    except OSError:
        pass
    return out


def reset_peak_rss() -> bool:
    """Reset this process's peak RSS (``VmHWM``) to its current RSS (Linux >= 4.0)."""
    try:
        with open("/proc/self/clear_refs", "w") as fh:
            fh.write("5")
        return True
    except OSError:
        return False


def maxrss_bytes() -> int:
    """Peak RSS of this process so far (``ru_maxrss``)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def dir_size(path: Path) -> int:
    """Bytes of all files under ``path``."""
    total = 0
    for dirpath, _dirs, files in os.walk(path):
        for name in files:
            total += os.path.getsize(os.path.join(dirpath, name))
    return total


# -- fresh-process workers ---------------------------------------------------------------
def run_worker(task: str, env: dict | None = None, **params) -> dict:
    """Run one measurement in a fresh Python process (see ``_worker.py``); its result.
    ``env``: variables added to the worker's environment."""
    cmd = [sys.executable, str(WORKER), task, json.dumps(params)]
    started = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True, env={**os.environ, **env} if env else None)
    process_wall = time.perf_counter() - started
    if proc.returncode != 0:
        raise RuntimeError(f"worker {task} {params} failed:\n{proc.stderr[-4000:]}")
    last = [line for line in proc.stdout.splitlines() if line.startswith("{")][-1]
    result = json.loads(last)
    # The whole process, start to exit: interpreter, imports (TVM's own), the step, cleanup.
    result["process_wall"] = process_wall
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    result["children_maxrss"] = usage.ru_maxrss * 1024
    return result


# -- output ------------------------------------------------------------------------------
def mib(n: float) -> str:
    return f"{n / 2**20:.1f} MiB"


def table(headers: list[str], rows: list[list]) -> str:
    """A Markdown table."""
    cells = [[str(c) for c in r] for r in rows]
    widths = [max(len(h), *(len(r[i]) for r in cells)) if cells else len(h) for i, h in enumerate(headers)]
    line = lambda vals: "| " + " | ".join(v.ljust(w) for v, w in zip(vals, widths)) + " |"  # noqa: E731
    out = [line(headers), "|" + "|".join("-" * (w + 2) for w in widths) + "|"]
    out += [line(r) for r in cells]
    return "\n".join(out)


def verdict(value: float, goal: float) -> str:
    return "met" if value <= goal else "MISSED"


def machine_note() -> str:
    """One line about where and when this ran."""
    try:
        load = os.getloadavg()[0]
    except OSError:
        load = float("nan")
    return (
        f"{time.strftime('%Y-%m-%d %H:%M')} · {os.cpu_count()} cores · load {load:.1f} · "
        f"Python {sys.version.split()[0]}"
    )


def save_json(path: str | None, data) -> None:
    if path:
        Path(path).write_text(json.dumps(data, indent=1, default=str))
        print(f"\nresults written to {path}")

"""What /proc says about a process, for the tests and bench/stop_latency.py (no pytest here)."""

from __future__ import annotations

from pathlib import Path


def gone(pid: int) -> bool:
    """True once ``pid`` has exited (a zombie waiting for an init that does not reap counts)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except (FileNotFoundError, ProcessLookupError):
        return True
    return stat.rsplit(")", 1)[1].split()[0] in ("Z", "X")

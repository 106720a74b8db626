"""Writing overlays into a folder: every file atomically (a temporary file renamed over it),
only into a folder that is new, empty or one ``tvm-explorer overlays`` wrote (its
``overlays.json``), and a previous run's files that this run does not write are removed (a
time overlay from an earlier profile would otherwise look current)."""

from __future__ import annotations

import contextlib
import json
import os
from pathlib import Path

from tvm_explorer.errors import ExplorerError
from tvm_explorer.interop.model_explorer import Overlays
from tvm_explorer.whole_files import replace_whole

MARKER = "overlays.json"
FORMAT = "tvm-explorer-overlays"
README = "README.md"


def check_folder(out: Path) -> list[str]:
    """The files a previous run wrote into ``out`` (empty for a new or empty folder); raises
    ExplorerError naming what is in any other folder."""
    if out.is_symlink():
        raise ExplorerError(f"{out}: is a symbolic link; give the folder itself")
    if out.exists() and not out.is_dir():
        raise ExplorerError(f"{out}: exists and is not a folder")
    if not out.exists():
        return []
    entries = sorted(os.listdir(out))
    if not entries:
        return []
    marker = out / MARKER
    previous = None
    if marker.is_file() and not marker.is_symlink():
        try:
            previous = json.loads(marker.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            previous = None
    if not isinstance(previous, dict) or previous.get("format") != FORMAT:
        shown = ", ".join(entries[:3]) + (f" and {len(entries) - 3} more" if len(entries) > 3 else "")
        raise ExplorerError(
            f"{out}: not empty and not written by tvm-explorer overlays (it holds {shown}); give a new or empty folder"
        )
    files = previous.get("files")
    return [f for f in files if isinstance(f, str) and "/" not in f and f not in ("", ".", "..")] if files else []


def write_text(path: Path, text: str) -> None:
    """``path`` holds ``text`` or what it held before, never half of it."""
    replace_whole(path, text.encode("utf-8"))


def write_overlays(out: Path, overlays: Overlays, readme: str, about: dict) -> list[Path]:
    """Write every overlay, the README and the marker into ``out``; returns the overlay paths."""
    previous = check_folder(out)
    try:
        out.mkdir(parents=True, exist_ok=True)
        paths = []
        for overlay in overlays.written:
            path = out / overlay.file
            write_text(path, json.dumps(overlay.node_data(), indent=1) + "\n")
            paths.append(path)
        write_text(out / README, readme)
        names = [o.file for o in overlays.written] + [README]
        for stale in set(previous) - set(names) - {MARKER}:
            with contextlib.suppress(FileNotFoundError):
                (out / stale).unlink()
        marker = {
            "format": FORMAT,
            **about,
            "files": names,
            "skipped": [{"file": s.file, "reason": s.reason} for s in overlays.skipped],
        }
        write_text(out / MARKER, json.dumps(marker, indent=1) + "\n")
    except OSError as err:
        raise ExplorerError(f"{out}: cannot write the overlays ({err.strerror or err})") from None
    return paths

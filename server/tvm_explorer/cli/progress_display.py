"""Turn capture's ``ProgressEvent``s into output: a ``rich`` progress bar on a terminal,
JSON lines (``--progress json``) for programs such as the VS Code extension, or nothing.
JSON lines are ``{"event": "progress", …}`` when a step finished and ``{"event": "start", …}``
when one begins (same fields; ``done`` counts the steps finished before it).

``auto`` (the default) draws the bar only when stdout is a terminal, so that pipes, logs and
CI output stay exactly as quiet as before.
"""

from __future__ import annotations

import contextlib
import json
import sys
from collections.abc import Iterator
from typing import TextIO

MODES = ("auto", "bar", "json", "none")
STAGE_LABELS = {
    "import": "import",
    "relax": "Relax",
    "tir": "TIR",
    "code": "codegen",
    "tune": "tune",
    "run": "run",
    "write": "write",
}


def resolve_mode(mode: str, stream: TextIO) -> str:
    """``auto`` becomes ``bar`` on a terminal and ``none`` elsewhere."""
    if mode != "auto":
        return mode
    try:
        return "bar" if stream.isatty() else "none"
    except (AttributeError, ValueError):
        return "none"


def _json_lines(stream: TextIO):
    def emit(event) -> None:
        kind = "start" if event.phase == "start" else "progress"
        stream.write(json.dumps({"event": kind, **event.to_json()}) + "\n")
        stream.flush()

    return emit


@contextlib.contextmanager
def _bar(stream: TextIO) -> Iterator:
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    console = Console(file=stream, force_terminal=True)
    bar = Progress(
        TextColumn("[bold]{task.fields[stage]:>7}[/]"),
        BarColumn(bar_width=30),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TextColumn("{task.description}", markup=False),
        console=console,
        transient=False,
        refresh_per_second=8,
    )
    task = bar.add_task("planning the pipeline", total=None, stage="compile")
    shown = {"stage": "compile"}

    def update(event) -> None:
        label = STAGE_LABELS.get(event.stage, event.stage)
        what = f"running {event.name}" if event.phase == "start" else event.name
        bar.update(task, completed=event.done, total=event.total or None, stage=label, description=what)
        # a fast stage can begin and end between two timed redraws: draw every stage once
        if label != shown["stage"]:
            shown["stage"] = label
            bar.refresh()

    with bar:
        yield update


@contextlib.contextmanager
def progress_display(mode: str, stream: TextIO | None = None) -> Iterator:
    """A listener for ``compile_model(on_progress=...)`` (None when quiet), live for the
    ``with`` block; the bar is finished (left on screen) when the block ends."""
    stream = stream or sys.stdout
    mode = resolve_mode(mode, stream)
    if mode == "json":
        yield _json_lines(stream)
    elif mode == "bar":
        with _bar(stream) as update:
            yield update
    else:
        yield None

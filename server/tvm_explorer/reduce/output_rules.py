"""Where ``reduce -o SMALL`` may write: the rules of ``compile -o``, for files.

``reduce`` writes SMALL and, beside it, ``SMALL.report.md``, ``SMALL.repro.py``, with
``--reference`` ``SMALL.reference.EXT``, when interrupted the same as ``SMALL.partial.*``, and
``SMALL.bundle`` (a ``compile -o``, with that command's rules). Before the search starts, and
again just before anything is written, each of these paths must be:

- not a symbolic link (it would be followed: VS Code's default ``MODEL.reduced.EXT`` planted
  as a link to a file elsewhere had that file overwritten);
- not one of the inputs (the model, the reference), by path or as the same file (a hard link);
- new, or a file this command wrote before: the report ``reduce`` writes ends with a line that
  records the files it wrote (``record_line``; the bundle's section may follow it), and only
  those may be replaced.

Files are then written whole (a temporary sibling renamed into place), so even a link planted
meanwhile is replaced, never written through.
"""

from __future__ import annotations

import contextlib
import json
import os
import stat
import tempfile

from tvm_explorer.errors import ExplorerError
from tvm_explorer.whole_files import current_umask

_RECORD = "<!-- tvm-explorer reduce wrote: "
_RULE = "reduce writes only new files or the files a previous reduce wrote there"


def partial_name(output: str) -> str:
    stem, ext = os.path.splitext(output)
    return f"{stem}.partial{ext}"


def files_of(output: str, reference: str | None) -> list[str]:
    """What ``reduce`` writes for the reduced model ``output``: the model, its report and
    repro, and the cut reference."""
    stem, ext = os.path.splitext(output)
    files = [output, stem + ".report.md", stem + ".repro.py"]
    if reference is not None:
        files.append(stem + ".reference" + ext)
    return files


def record_line(files: list[str]) -> str:
    """The report's last line: which files this reduce wrote (by name, in the report's folder)."""
    return _RECORD + json.dumps({"files": [os.path.basename(f) for f in files]}) + " -->\n"


def check_outputs(model: str, reference: str | None, output: str) -> None:
    """Raise ExplorerError, with one message naming the path, unless every path ``reduce``
    may write for ``output`` (complete or partial, and ``SMALL.bundle``) follows the rules
    above."""
    from tvm_explorer.bundle.ownership import inspect_output

    for small in (output, partial_name(output)):
        check_files(model, reference, small)
    inspect_output(os.path.splitext(output)[0] + ".bundle", [p for p in (model, reference) if p is not None])


def check_files(model: str, reference: str | None, small: str) -> None:
    """``check_outputs`` for the files of one reduced model ``small`` (not its bundle)."""
    inputs = [p for p in (model, reference) if p is not None]
    files = files_of(small, reference)
    ours = _recorded(files[1])
    for path in files:
        _check_one(path, inputs, ours)


def _check_one(path: str, inputs: list[str], ours: set[str]) -> None:
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        info = None
    except OSError as err:
        raise ExplorerError(f"{path}: cannot check the output path ({err.strerror}); nothing written") from None
    if info is not None and stat.S_ISLNK(info.st_mode):
        raise ExplorerError(f"{path}: output path is a symbolic link; refusing to write there ({_RULE})")
    for item in inputs:
        if os.path.abspath(path) == os.path.abspath(item) or (info is not None and _same_file(path, item)):
            raise ExplorerError(
                f"{path}: output path is {item}, an input of this reduce; refusing to write over it (choose another -o)"
            )
    if info is None:
        return
    if not stat.S_ISREG(info.st_mode):
        raise ExplorerError(f"{path}: output path exists and is not a regular file; refusing to write there")
    if os.path.basename(path) not in ours:
        raise ExplorerError(
            f"{path}: exists, and tvm-explorer reduce did not write it; refusing to overwrite it "
            f"({_RULE}): move it away or choose another -o"
        )


def _same_file(a: str, b: str) -> bool:
    try:
        return os.path.samefile(a, b)
    except OSError:
        return False


def _recorded(report: str) -> set[str]:
    """The names the report at ``report`` records as written by reduce (none if it is not a
    regular file of ours)."""
    try:
        if not stat.S_ISREG(os.lstat(report).st_mode):
            return set()
        with open(report, "rb") as fh:
            fh.seek(0, os.SEEK_END)
            fh.seek(max(0, fh.tell() - 64 * 1024))  # the record is near the end
            tail = fh.read().decode("utf-8", "replace")
    except OSError:
        return set()
    at = tail.rfind(_RECORD)
    if at < 0:
        return set()
    try:
        files = json.loads(tail[at + len(_RECORD) :].split(" -->", 1)[0]).get("files")
    except (ValueError, AttributeError):
        return set()
    return {f for f in files if isinstance(f, str)} if isinstance(files, list) else set()


def write_model(path: str, write) -> None:
    """``write(tmp)`` writes a model file; it is renamed to ``path`` only when complete."""
    folder = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(dir=folder, prefix=f".{os.path.basename(path)}.", suffix=os.path.splitext(path)[1])
    os.close(fd)
    try:
        write(tmp)
        os.chmod(tmp, 0o666 & ~current_umask())  # as open() would have made it, not mkstemp's 0600
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise

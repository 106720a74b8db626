"""Turn a bundle's ``index.json`` into compact per-document indexes (a worker process parses
large ones).

Parsing JSON makes a Python object per number, string and list: for the 8 MB index of a
60 MiB bundle, about 45 MiB of short-lived objects. CPython hands a 1 MiB block of its small
object heap back to the system only when nothing in it is alive any more, and the few objects
a load keeps (key strings, layers, origin sets) end up spread over nearly every block the
parse used: the server stayed ~40 MiB above what it holds. An index of ``WORKER_MIN_BYTES`` or
more is therefore parsed and converted in a fresh ``python`` process, which sends back only
the compact columns; the server's heap never sees the parse. If the worker cannot be started
or fails in any way, the index is parsed here, with the same result (tested both ways).
"""

from __future__ import annotations

import os
import sys
import threading
from collections.abc import Callable
from itertools import zip_longest
from operator import le as _le
from pathlib import Path
from typing import NamedTuple

from tvm_explorer.bundle.format import SCHEMA_VERSION
from tvm_explorer.bundle.index import KIND_CODES, DocumentIndex, Strings, empty_index
from tvm_explorer.errors import BundleError
from tvm_explorer.supervise.child_python import python_module_command

WORKER_MIN_BYTES = 1 << 20
"""Indexes this large or larger are parsed in a worker process (smaller ones leave little to
fragment, and a worker costs ~40 ms to start)."""

WORKER_TIMEOUT_S = 300.0
"""A worker still parsing after this long is stopped and the index parsed here instead."""

_INT64 = 2**63
_ARRAYS = ("_starts", "_ends", "_sets", "_keys", "_links")


Prepare = Callable[[object], "Callable[[DocumentIndex], object] | None"]
"""Work on each document's index as soon as it is converted: called once with the raw
``origin_sets``, it returns the function to call on each converted index (or None for none).
What that function returns is kept in ``ParsedIndex.parts`` (an exception keeps nothing).
While a worker streams the documents in, this runs beside its parse on the other core."""


class ParsedIndex(NamedTuple):
    """``index.json`` checked at the top level, with every document's ranges converted.

    ``layers`` and ``origin_sets`` are the raw JSON values (the reader validates them);
    ``documents`` maps a path to ``(index, length)`` or the BundleError that names what is
    wrong with that document's entry; ``strings`` numbers the keys and links of them all;
    ``prepared`` is what ``prepare`` returned and ``parts`` what that made of each document."""

    layers: object
    origin_sets: object
    documents: dict[str, tuple[DocumentIndex, int] | BundleError]
    strings: Strings
    prepared: object = None
    parts: dict[str, object] = {}


def load_index(data: bytes, where: Path, prepare: Prepare | None = None) -> ParsedIndex:
    """The parsed ``index.json`` (``data``; ``where`` names it in messages): in a worker
    process when large, else here. Raises BundleError when it is not a readable index."""
    if len(data) >= WORKER_MIN_BYTES:
        got = _parse_in_worker(data, where, prepare)
        if got is not None:
            return got
    return parse_index(data, where, prepare)


def parse_index(data: bytes, where: Path, prepare: Prepare | None = None) -> ParsedIndex:
    """Parse and convert ``index.json`` in this process."""
    layers, origin_sets, raw = _parse_top(data, where)
    del data
    parts = _Parts(prepare, origin_sets)
    strings = Strings()
    documents: dict[str, tuple[DocumentIndex, int] | BundleError] = {}
    for path, got in _convert_all(raw, strings, origin_sets, where):
        documents[path] = got
        if not isinstance(got, BundleError):
            parts.add(path, got[0])
    return ParsedIndex(layers, origin_sets, documents, strings, parts.prepared, parts.made)


def _parse_top(data: bytes, where: Path) -> tuple[object, object, dict]:
    """``index.json`` parsed and checked at the top level: raw layers, origin sets and
    documents (raises BundleError naming what is wrong)."""
    import json

    try:
        index = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError, RecursionError) as err:
        raise BundleError(f"{where}: provenance index is not readable JSON ({err})") from None
    if not isinstance(index, dict) or index.get("schema_version") != SCHEMA_VERSION:
        raise BundleError(f"{where}: unknown index schema")
    layers, origin_sets, raw = index.get("layers"), index.get("origin_sets"), index.get("documents")
    if not isinstance(raw, dict):
        raise BundleError(f"{where}: 'documents' must be an object")
    return layers, origin_sets, raw


def _convert_all(raw: dict, strings: Strings, origin_sets, where: Path):
    """``(path, (index, length) or BundleError)`` for each document of ``raw``, in order
    (each document's lists are dropped from ``raw`` once converted)."""
    nsets = len(origin_sets) if isinstance(origin_sets, list) else 0
    for path in list(raw):
        entry = raw.pop(path)
        try:
            yield path, convert_document(entry, strings, nsets, f"{where} ({path})")
        except BundleError as err:
            yield path, err


class _Parts:
    """Runs a ``Prepare`` on each converted document, keeping what it made."""

    def __init__(self, prepare: Prepare | None, origin_sets) -> None:
        self.made: dict[str, object] = {}
        try:
            self.prepared = prepare(origin_sets) if prepare is not None else None
        except Exception:  # noqa: BLE001 - preparing is a saving: the reader validates and reports
            self.prepared = None

    def add(self, path: str, index: DocumentIndex) -> None:
        if self.prepared is None:
            return
        try:
            self.made[path] = self.prepared(index)
        except Exception:  # noqa: BLE001 - the part is then made later, from the validated bundle
            self.made.pop(path, None)


def convert_document(raw, strings: Strings, nsets: int, where: str) -> tuple[DocumentIndex, int]:
    """A document's ``index.json`` entry as a compact, validated ``DocumentIndex`` and the
    document length it was made for (BundleError naming the first bad range otherwise)."""
    if not isinstance(raw, dict) or not isinstance(raw.get("length"), int):
        raise BundleError(f"{where}: index does not match the document (stale or damaged)")
    length = raw["length"]
    ranges = raw.get("ranges", ())
    if type(ranges) is list and not ranges:
        return empty_index(strings), length
    index = DocumentIndex(None, strings)
    columns = _columns(ranges, length, nsets)
    if columns is not None:
        index.extend(*columns)
        return index.finish(), length
    # Something is wrong: convert range by range, to name the first bad one.
    try:
        for item in ranges:
            start, end, oset, kind, key = item[:5]
            link = item[5] if len(item) > 5 else None
            if not all(type(v) is int for v in (start, end, oset)):
                raise BundleError(f"{where}: range {item[:3]!r} has non-integer offsets")
            if not isinstance(key, str) or not (link is None or isinstance(link, str)):
                raise BundleError(f"{where}: range [{start}, {end}) has a malformed key or link")
            if not (0 <= start <= end <= length):
                raise BundleError(f"{where}: range [{start}, {end}) lies past the document end")
            code = KIND_CODES.get(kind) if isinstance(kind, str) else None
            if not 0 <= oset < nsets or code is None:
                raise BundleError(f"{where}: range [{start}, {end}) is malformed")
            index.append(start, end, oset, code, key, link)
    except (TypeError, ValueError, OverflowError):
        raise BundleError(f"{where}: ranges are malformed") from None
    return index.finish(), length


def _columns(ranges, length: int, nsets: int):
    """A document's ranges (index.json lists) as columns ``(starts, ends, sets, kinds, keys,
    links)`` when every range is well formed, else None (the caller then names the first bad
    one). Column-wise checks: a large bundle's 100 k ranges, one by one, took most of its load."""
    try:
        if type(ranges) is not list or (ranges and set(map(type, ranges)) != {list}):
            return None
        if not ranges:
            return (), (), (), [], (), ()
        if min(map(len, ranges)) < 5:
            return None
        longest = max(map(len, ranges))
        # The sixth column, where a range has none, is filled with None (no link).
        columns = list(zip_longest(*ranges)) if longest > 5 else list(zip(*ranges))
        starts, ends, sets, kinds, keys = columns[:5]
        links = columns[5] if longest > 5 else (None,) * len(ranges)
        ints = {int}
        if not (
            set(map(type, starts)) <= ints
            and set(map(type, ends)) <= ints
            and set(map(type, sets)) <= ints
            and set(map(type, keys)) == {str}
            and set(map(type, links)) <= {str, type(None)}
        ):
            return None
        if not (
            min(starts) >= 0
            and max(ends) <= length
            and all(map(_le, starts, ends))
            and min(sets) >= 0
            and max(sets) < nsets
            and max(ends) < _INT64
        ):
            return None
        if not set(map(type, kinds)) <= {str}:
            return None
        codes = list(map(KIND_CODES.get, kinds))
        if None in codes:
            return None
        return starts, ends, sets, codes, keys, links
    except (TypeError, ValueError):
        return None


# -- the worker -----------------------------------------------------------------------------
# Its answer, streamed as it converts: a line of JSON (layers and origin sets, or why the index
# is refused); then batches of documents, each a line of JSON ``{"docs": [...]}`` (per
# document its path and error, or its path, length, range count and the strings first used in
# it) followed by the arrays of its documents that have ranges, as raw bytes; then
# ``{"end": count}``. Read with ``json.loads`` and ``array.frombytes`` only: nothing from a
# bundle ever reaches a deserializer that could execute it. The server reads each batch while
# the worker converts the next (``prepare`` runs then). A line per document took most of the
# load of a bundle of 100,000 small documents.

_BATCH_DOCUMENTS = 1024
_BATCH_BYTES = 1 << 20


def _write_answer(data: bytes, where: Path, out) -> None:
    """Parse ``data`` and write the answer to the binary stream ``out``."""
    import json

    try:
        layers, origin_sets, raw = _parse_top(data, where)
    except BundleError as err:
        out.write(json.dumps({"refused": str(err)}).encode() + b"\n")
        return
    del data
    out.write(json.dumps({"layers": layers, "origin_sets": origin_sets}).encode() + b"\n")
    strings, sent, count = Strings(), 0, 0
    entries: list[list] = []
    arrays: list[bytes] = []
    size = 0

    def flush() -> None:
        nonlocal size
        if entries:
            out.write(json.dumps({"docs": entries}).encode() + b"\n")
            out.writelines(arrays)
            entries.clear()
            arrays.clear()
            size = 0

    for path, got in _convert_all(raw, strings, origin_sets, where):
        count += 1
        if isinstance(got, BundleError):
            entries.append([path, str(got)])
        else:
            index, length = got
            entries.append([path, length, len(index), strings.items[sent:]])
            sent = len(strings.items)
            if len(index):
                for name in _ARRAYS:
                    arrays.append(getattr(index, name).tobytes())
                arrays.append(bytes(index._kinds))
                size += len(index) * 41
        if len(entries) >= _BATCH_DOCUMENTS or size >= _BATCH_BYTES:
            flush()
    flush()
    out.write(json.dumps({"end": count}).encode() + b"\n")


def _read_answer(stream, prepare: Prepare | None) -> ParsedIndex:
    """The worker's answer from the binary stream ``stream`` (raises BundleError for a
    refused index; ValueError and the like for a garbled or truncated one)."""
    import json

    head = json.loads(stream.readline())
    if "refused" in head:
        raise BundleError(head["refused"])
    parts = _Parts(prepare, head["origin_sets"])
    strings = Strings()
    documents: dict[str, tuple[DocumentIndex, int] | BundleError] = {}
    while True:
        batch = json.loads(stream.readline())  # "" (the answer stopped short): ValueError
        if "end" in batch:
            if batch["end"] != len(documents):
                raise ValueError("answer lost documents")
            break
        for entry in batch["docs"]:
            path = entry[0]
            if len(entry) == 2:
                documents[path] = BundleError(entry[1])
                continue
            _, length, n, new = entry
            strings.ids.update(zip(new, range(len(strings.items), len(strings.items) + len(new))))
            strings.items.extend(new)
            if not n:
                index = empty_index(strings)
            else:
                index = DocumentIndex(None, strings)
                for name in _ARRAYS:
                    column = getattr(index, name)
                    column.frombytes(_read_exactly(stream, n * column.itemsize))
                index._kinds = bytearray(_read_exactly(stream, n))
                index.finish(sorted_already=True)
            documents[path] = (index, length)
            parts.add(path, index)
    if stream.read(1):
        raise ValueError("answer longer than announced")
    return ParsedIndex(head["layers"], head["origin_sets"], documents, strings, parts.prepared, parts.made)


def _read_exactly(stream, size: int) -> bytes:
    got = stream.read(size)
    if len(got) != size:
        raise ValueError("truncated answer")
    return got


def _parse_in_worker(data: bytes, where: Path, prepare: Prepare | None = None) -> ParsedIndex | None:
    """``parse_index`` run by a fresh interpreter; None if that failed for any reason (the
    caller then parses here: a worker is a saving, never a requirement)."""
    import subprocess  # here: the worker itself never needs it

    package_root = str(Path(__file__).resolve().parents[2])
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (package_root, env.get("PYTHONPATH")) if p)
    try:
        worker = subprocess.Popen(
            # site=False (-S): no site-packages (the worker needs only the standard library and
            # this package, on PYTHONPATH), which starts it ~20 ms sooner; never the cwd (the
            # bundle or workspace the user stands in)
            python_module_command(__name__, str(where), site=False),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env=env,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    stdin, stdout = worker.stdin, worker.stdout
    assert stdin is not None and stdout is not None  # both pipes (PIPE)
    # A worker that hangs is stopped: its answer then ends short, and the index is parsed here.
    watchdog = threading.Timer(WORKER_TIMEOUT_S, worker.kill)
    watchdog.daemon = True
    watchdog.start()
    try:
        try:
            # The worker reads all of its input before it answers: no deadlock.
            stdin.write(data)
            stdin.close()
        except OSError:  # it died at start
            return None
        try:
            got = _read_answer(stdout, prepare)
        except BundleError:
            raise
        except Exception:  # noqa: BLE001 - a truncated or garbled answer: parse here instead
            return None
        return got if worker.wait() == 0 else None
    finally:
        watchdog.cancel()
        if worker.poll() is None:
            worker.kill()
        stdout.close()
        worker.wait()


def _worker_main(argv: list[str]) -> int:
    """Read ``index.json`` bytes from stdin, write the answer to stdout."""
    import gc

    gc.disable()  # a parse makes no cycles, and collections walking its million objects took 30 %
    out = sys.stdout.buffer
    _write_answer(sys.stdin.buffer.read(), Path(argv[0]), out)
    out.flush()
    return 0


if __name__ == "__main__":
    sys.exit(_worker_main(sys.argv[1:]))

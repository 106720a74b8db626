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
from itertools import zip_longest
from operator import le as _le
from pathlib import Path
from typing import NamedTuple

from ..errors import BundleError
from .format import SCHEMA_VERSION
from .index import KIND_CODES, DocumentIndex, Strings

WORKER_MIN_BYTES = 1 << 20
"""Indexes this large or larger are parsed in a worker process (smaller ones leave little to
fragment, and a worker costs ~40 ms to start)."""

WORKER_TIMEOUT_S = 300.0
"""A worker still parsing after this long is stopped and the index parsed here instead."""

_INT64 = 2**63
_ARRAYS = ("_starts", "_ends", "_sets", "_keys", "_links")


class ParsedIndex(NamedTuple):
    """``index.json`` checked at the top level, with every document's ranges converted.

    ``layers`` and ``origin_sets`` are the raw JSON values (the reader validates them);
    ``documents`` maps a path to ``(index, length)`` or the BundleError that names what is
    wrong with that document's entry; ``strings`` numbers the keys and links of them all."""

    layers: object
    origin_sets: object
    documents: dict[str, tuple[DocumentIndex, int] | BundleError]
    strings: Strings


def load_index(data: bytes, where: Path) -> ParsedIndex:
    """The parsed ``index.json`` (``data``; ``where`` names it in messages): in a worker
    process when large, else here. Raises BundleError when it is not a readable index."""
    if len(data) >= WORKER_MIN_BYTES:
        got = _parse_in_worker(data, where)
        if got is not None:
            return got
    return parse_index(data, where)


def parse_index(data: bytes, where: Path) -> ParsedIndex:
    """Parse and convert ``index.json`` in this process."""
    import json

    try:
        index = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError, RecursionError) as err:
        raise BundleError(f"{where}: provenance index is not readable JSON ({err})") from None
    del data
    if not isinstance(index, dict) or index.get("schema_version") != SCHEMA_VERSION:
        raise BundleError(f"{where}: unknown index schema")
    layers, origin_sets, raw = index.get("layers"), index.get("origin_sets"), index.get("documents")
    if not isinstance(raw, dict):
        raise BundleError(f"{where}: 'documents' must be an object")
    del index
    nsets = len(origin_sets) if isinstance(origin_sets, list) else 0
    strings = Strings()
    documents: dict[str, tuple[DocumentIndex, int] | BundleError] = {}
    for path in list(raw):
        entry = raw.pop(path)  # each document's lists are freed once converted
        try:
            documents[path] = convert_document(entry, strings, nsets, f"{where} ({path})")
        except BundleError as err:
            documents[path] = err
    return ParsedIndex(layers, origin_sets, documents, strings)


def convert_document(raw, strings: Strings, nsets: int, where: str) -> tuple[DocumentIndex, int]:
    """A document's ``index.json`` entry as a compact, validated ``DocumentIndex`` and the
    document length it was made for (BundleError naming the first bad range otherwise)."""
    if not isinstance(raw, dict) or not isinstance(raw.get("length"), int):
        raise BundleError(f"{where}: index does not match the document (stale or damaged)")
    length = raw["length"]
    ranges = raw.get("ranges", ())
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
        if not (set(map(type, starts)) <= ints and set(map(type, ends)) <= ints
                and set(map(type, sets)) <= ints and set(map(type, keys)) == {str}
                and set(map(type, links)) <= {str, type(None)}):
            return None
        if not (min(starts) >= 0 and max(ends) <= length and all(map(_le, starts, ends))
                and min(sets) >= 0 and max(sets) < nsets and max(ends) < _INT64):
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
# Its answer: one line of JSON (layers, origin sets, strings, and per document its length and
# range count or its error), then every converted document's arrays as raw bytes, in the
# order of that line. Read back with ``json.loads`` and ``array.frombytes`` only: nothing
# from a bundle ever reaches a deserializer that could execute it.


def _encode(parsed: ParsedIndex) -> bytes:
    """The worker's answer for ``parsed``."""
    import json

    documents, blobs = {}, []
    for path, got in parsed.documents.items():
        if isinstance(got, BundleError):
            documents[path] = {"error": str(got)}
            continue
        index, length = got
        documents[path] = {"length": length, "ranges": len(index)}
        blobs.extend(getattr(index, name).tobytes() for name in _ARRAYS)
        blobs.append(bytes(index._kinds))
    head = json.dumps({"layers": parsed.layers, "origin_sets": parsed.origin_sets,
                       "strings": parsed.strings.items, "documents": documents})
    return b"".join([head.encode(), b"\n", *blobs])


def _decode(answer: bytes) -> ParsedIndex:
    """The worker's answer as a ``ParsedIndex`` (raises BundleError for a refused index;
    ValueError and the like for a garbled one)."""
    import json

    line_end = answer.index(b"\n")
    head = json.loads(answer[:line_end])
    if "refused" in head:
        raise BundleError(head["refused"])
    strings = Strings()
    strings.items = head["strings"]
    strings.ids = {s: i for i, s in enumerate(strings.items)}
    documents: dict[str, tuple[DocumentIndex, int] | BundleError] = {}
    at = line_end + 1
    for path, entry in head["documents"].items():
        if "error" in entry:
            documents[path] = BundleError(entry["error"])
            continue
        n = entry["ranges"]
        index = DocumentIndex(None, strings)
        for name in _ARRAYS:
            column = getattr(index, name)
            size = n * column.itemsize
            column.frombytes(answer[at : at + size])
            at += size
        index._kinds = bytearray(answer[at : at + n])
        at += n
        if len(index._kinds) != n:
            raise ValueError("truncated answer")
        documents[path] = (index.finish(sorted_already=True), entry["length"])
    if at != len(answer):
        raise ValueError("answer longer than announced")
    return ParsedIndex(head["layers"], head["origin_sets"], documents, strings)


def _parse_in_worker(data: bytes, where: Path) -> ParsedIndex | None:
    """``parse_index`` run by a fresh interpreter; None if that failed for any reason (the
    caller then parses here: a worker is a saving, never a requirement)."""
    import subprocess  # here: the worker itself never needs it

    package_root = str(Path(__file__).resolve().parents[2])
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (package_root, env.get("PYTHONPATH")) if p)
    try:
        done = subprocess.run(
            # -S: no site-packages (the worker needs only the standard library and this
            # package, on PYTHONPATH), which starts it ~20 ms sooner
            [sys.executable, "-S", "-m", __name__, str(where)], input=data, capture_output=True,
            env=env, timeout=WORKER_TIMEOUT_S, check=False)
    except (OSError, subprocess.SubprocessError):
        return None
    if done.returncode != 0:
        return None
    try:
        return _decode(done.stdout)
    except BundleError:
        raise
    except Exception:  # a truncated or garbled answer: parse here instead
        return None


def _worker_main(argv: list[str]) -> int:
    """Read ``index.json`` bytes from stdin, write the encoded ``ParsedIndex`` to stdout."""
    import gc

    gc.disable()  # a parse makes no cycles, and collections walking its million objects took 30 %
    data = sys.stdin.buffer.read()
    try:
        parsed = parse_index(data, Path(argv[0]))
    except BundleError as err:
        import json

        out = json.dumps({"refused": str(err)}).encode() + b"\n"
    else:
        out = _encode(parsed)
    sys.stdout.buffer.write(out)
    sys.stdout.buffer.flush()
    return 0


if __name__ == "__main__":
    sys.exit(_worker_main(sys.argv[1:]))

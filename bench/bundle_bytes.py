"""Bundle bytes: how much of a bundle is function text repeated from an earlier pass.

Consecutive pass documents (``relax/*.relax``, ``tir/*.tir``) print the whole module after
every pass that changed it, so a function a pass left alone is printed again, byte for byte.
For each bundle this splits every IR document into its top-level functions (the outermost
``function`` / ``primfunc`` ranges of ``index.json``) plus the text between them, and counts
the bytes of function texts already printed, identically, in an earlier document of the
bundle: the bytes that storing each function's text once would save.

Usage:
    .venv/bin/python bench/bundle_bytes.py BUNDLE [BUNDLE ...] [--json out.json]
    .venv/bin/python bench/bundle_bytes.py --compile MODEL.tflite:TARGET [...]   (compiles first)
"""

from __future__ import annotations

import argparse
import hashlib
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import benchlib as bl  # noqa: E402

FUNCTION_KINDS = ("function", "primfunc")


def split_functions(text: str, ranges) -> list[tuple[int, int, str]]:
    """Outermost function/primfunc ranges of a document, as ``(start, end, key)``."""
    spans, end_of_last = [], -1
    for r in ranges:
        if r.kind in FUNCTION_KINDS and r.start >= end_of_last:
            spans.append((r.start, r.end, r.key))
            end_of_last = r.end
    return spans


def lines_seen(body: str, previous: str | None) -> int:
    """Bytes of ``body``'s lines that also occur in ``previous`` (the same function's last
    different printing): what a line-level delta against it would not store again."""
    if previous is None:
        return 0
    pool: dict[str, int] = {}
    for line in previous.split("\n"):
        pool[line] = pool.get(line, 0) + 1
    n = 0
    for line in body.split("\n"):
        if pool.get(line, 0) > 0:
            pool[line] -= 1
            n += len(line.encode("utf-8")) + 1
    return n


def measure(bundle_dir: Path) -> dict:
    """Byte counts of one bundle: total, per stage, IR documents, repeated function text."""
    from tvm_explorer.bundle.reader import Bundle

    bundle = Bundle(bundle_dir)
    on_disk = bl.dir_size(bundle_dir)
    index_bytes = (bundle_dir / "index.json").stat().st_size
    by_stage: dict[str, int] = {}
    ir_bytes = repeated = functions = repeated_functions = 0
    seen: set[bytes] = set()
    unique_bytes = delta_seen = 0
    last_text: dict[tuple[str, str], str] = {}
    for doc in bundle.documents:
        size = (bundle_dir / doc.path).stat().st_size
        by_stage[doc.stage] = by_stage.get(doc.stage, 0) + size
        if doc.stage not in ("relax", "tir"):
            continue
        ir_bytes += size
        text = bundle.text(doc.path)
        for start, end, key in split_functions(text, bundle.index(doc.path).ranges):
            body_text = text[start:end]
            body = body_text.encode("utf-8")
            digest = hashlib.blake2b(body, digest_size=16).digest()
            functions += 1
            if digest in seen:
                repeated += len(body)
                repeated_functions += 1
            else:
                seen.add(digest)
                unique_bytes += len(body)
                delta_seen += lines_seen(body_text, last_text.get((doc.stage, key)))
            last_text[(doc.stage, key)] = body_text
    return {
        "bundle": bundle_dir.name,
        "bytes": on_disk,
        "index_bytes": index_bytes,
        "by_stage": by_stage,
        "ir_bytes": ir_bytes,
        "ir_documents": sum(1 for d in bundle.documents if d.stage in ("relax", "tir")),
        "functions": functions,
        "repeated_functions": repeated_functions,
        "repeated_bytes": repeated,
        "unique_function_bytes": unique_bytes,
        "changed_lines_seen": delta_seen,
    }


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("bundles", nargs="*", help="bundle directories to measure")
    ap.add_argument(
        "--compile",
        action="append",
        default=[],
        metavar="MODEL:TARGET",
        help="compile MODEL for TARGET into a temporary bundle first (repeatable)",
    )
    ap.add_argument("--json", help="also write the results to this JSON file")
    args = ap.parse_args(argv)
    rows = []
    with tempfile.TemporaryDirectory(prefix="tvmx-bytes-") as tmp:
        dirs = [Path(b) for b in args.bundles]
        for spec in args.compile:
            model, _, target = spec.rpartition(":")
            out = Path(tmp) / f"{Path(model).stem}.{target}.bundle"
            subprocess.run(
                [sys.executable, "-m", "tvm_explorer", "compile", model, "-o", str(out), "--target", target],
                check=True,
                stdout=subprocess.DEVNULL,
            )
            dirs.append(out)
        for d in dirs:
            rows.append(measure(d))
    print("### Bundle bytes: function text repeated from an earlier pass\n")
    print(
        bl.table(
            [
                "bundle",
                "on disk",
                "index.json",
                "IR docs",
                "IR bytes",
                "functions printed",
                "of them repeats",
                "repeated bytes",
                "share of bundle",
                "share of IR",
                "changed functions: lines seen before",
            ],
            [
                [
                    r["bundle"],
                    bl.mib(r["bytes"]),
                    bl.mib(r["index_bytes"]),
                    r["ir_documents"],
                    bl.mib(r["ir_bytes"]),
                    r["functions"],
                    r["repeated_functions"],
                    bl.mib(r["repeated_bytes"]),
                    f"{r['repeated_bytes'] / r['bytes']:.1%}",
                    f"{r['repeated_bytes'] / max(r['ir_bytes'], 1):.1%}",
                    f"{bl.mib(r['changed_lines_seen'])} ({r['changed_lines_seen'] / max(r['ir_bytes'], 1):.0%} of IR)",
                ]
                for r in rows
            ],
        )
    )
    bl.save_json(args.json, rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())

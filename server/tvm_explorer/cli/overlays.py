"""``tvm-explorer overlays BUNDLE -o DIR``: per-layer time, error and code size as Model
Explorer node-data files (docs/model-explorer.md)."""

from __future__ import annotations

from pathlib import Path

from tvm_explorer.errors import ExplorerError, fail


def add_parser(sub) -> None:
    """``tvm-explorer overlays BUNDLE -o DIR``."""
    p = sub.add_parser(
        "overlays",
        help="per-layer time, error, code size and workspace as Model Explorer node-data files",
    )
    p.add_argument("bundle")
    p.add_argument(
        "-o", "--output", required=True, metavar="DIR", help="folder to write (new, empty, or an earlier one)"
    )
    p.set_defaults(run=run)


def run(args) -> int:
    """Write the overlays; one line per file written or skipped."""
    from tvm_explorer.interop.export import README, export_overlays

    try:
        done = export_overlays(args.bundle, Path(args.output))
    except ExplorerError as err:
        return fail(str(err))
    print(f"Model Explorer overlays written to {done.folder} (open {done.model_file} with {done.adapter}):")
    for overlay in done.overlays.written:
        n = len(overlay.values)
        print(f"  {overlay.file}: {overlay.title}, {n} node{'s' if n != 1 else ''}")
    for skipped in done.overlays.skipped:
        print(f"  skipped {skipped.file}: {skipped.reason}")
    if done.overlays.unkeyed:
        print(f"  {len(done.overlays.unkeyed)} layer(s) have no node in Model Explorer: listed in {README}")
    print(f"How to load them: {done.folder / README}")
    return 0

"""``tvm-explorer report BUNDLE -o REPORT.html``: the model graph with its overlays, the layer
panel with code excerpts, hot layers, numerics and passes in one self-contained HTML file."""

from __future__ import annotations

from tvm_explorer.cli.options import load_bundle
from tvm_explorer.errors import ExplorerError
from tvm_explorer.errors import fail as _fail


def add_parser(sub) -> None:
    """Register ``tvm-explorer report``."""
    p = sub.add_parser(
        "report",
        help="write one self-contained HTML report: the model graph with cost and error overlays, "
        "code excerpts per layer, hot layers, numerics, passes (docs/graph.md)",
    )
    p.add_argument("bundle")
    p.add_argument("-o", "--output", required=True, metavar="REPORT.html", help="the HTML file to write")
    p.set_defaults(run=_run_report)


def _run_report(args) -> int:
    from tvm_explorer.graphview.report import write_report
    from tvm_explorer.navigation.view import BundleView

    try:
        view = BundleView(load_bundle(args.bundle))
        out = write_report(view, args.output)
    except ExplorerError as err:
        return _fail(str(err))
    size = out.stat().st_size
    print(f"Report written: {out} ({size / 2**20:.1f} MiB); open it in any browser (no network needed)")
    return 0

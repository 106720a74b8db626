"""``tvm-explorer coverage BUNDLE``: per pass, its units and how many have origins."""

from __future__ import annotations

import json

from tvm_explorer.cli.options import add_bundle_query, load_bundle
from tvm_explorer.errors import ExplorerError
from tvm_explorer.errors import fail as _fail


def add_parser(sub) -> None:
    add_bundle_query(sub, "coverage", "per pass: units and how many have origins", _run_coverage)


def _run_coverage(args) -> int:
    try:
        b = load_bundle(args.bundle)
    except ExplorerError as err:
        return _fail(str(err))
    rows = [
        {k: p.get(k) for k in ("index", "name", "stage", "changed")}
        | {k: p.get(k, 0) for k in ("units", "attributed")}
        | {k: p[k] for k in ("tir_units", "tir_attributed", "note") if k in p}
        for p in b.manifest["passes"]
    ]
    if args.json:
        print(json.dumps({"passes": rows}, indent=1))
        return 0
    print(f"{'#':>4}  {'stage':6} {'pass':45} {'units':>7} {'attributed':>10}   %")
    for r in rows:
        pct = 100.0 * r["attributed"] / r["units"] if r["units"] else 100.0
        mark = "" if r.get("changed") else "  (unchanged)"
        print(
            f"{r['index']:>4}  {r['stage']:6} {r['name'][:45]:45} {r['units']:>7} "
            f"{r['attributed']:>10} {pct:6.1f}{mark}"
        )
    return 0

"""Time left on the table (docs/tuning.md): derived from the ledger's measured times, ranked,
in ``tvm-explorer tuning`` and its ``--json``. Uses the shared tuned and missed MLP bundles."""

from __future__ import annotations

import json

import pytest
from tests.conftest import run_cli


def _left(bundle) -> dict:
    return json.loads(run_cli("tuning", bundle, "--json").stdout)


def test_a_database_miss_puts_its_whole_measured_default_time_on_the_table(missed):
    data = _left(missed.bundle)
    left = data["time_left"]
    default = {k["kernel"]: k["default_us"] for k in data["kernels"]}
    profiled = {k["name"]: k["share"] for k in json.loads((missed.bundle / "costs.json").read_text())["kernels"]}
    assert left["share_from"] == "profile" and len(left["kernels"]) == len(data["kernels"]) == 2
    for row in left["kernels"]:
        assert default[row["kernel"]] and default[row["kernel"]] > 0, data["kernels"]  # measured, not assumed
        assert row["left_us"] == pytest.approx(default[row["kernel"]] * row["calls"], rel=1e-3)
        assert "whole default time" in row["why"]
        # untuned: its whole share of the profiled model time is on the table
        assert row["share"] == pytest.approx(profiled[row["kernel"]], abs=1e-6)
        assert row["left_share"] == pytest.approx(row["share"], abs=1e-5)
    assert left["total_left_share"] == pytest.approx(sum(profiled.values()), abs=1e-4)
    shares = [r["left_share"] for r in left["kernels"]]
    assert shares == sorted(shares, reverse=True)
    assert {e["layer"] for e in left["layers"]} == {lid for k in data["kernels"] for lid in k["layers"]}
    shown = run_cli("tuning", missed.bundle).stdout
    section = shown[shown.index("Time left on the table") :]
    first = next(line for line in section.splitlines() if line.strip().startswith("1 "))
    assert left["kernels"][0]["kernel"] in first


def test_a_tuned_kernel_leaves_only_what_the_default_schedule_measured_faster(tuned):
    data = _left(tuned.bundle)
    by_kernel = {k["kernel"]: k for k in data["kernels"]}
    # not profiled: weighted by the ledger's own times, which add up to the whole
    assert data["time_left"]["share_from"] == "ledger"
    assert sum(r["share"] for r in data["time_left"]["kernels"]) == pytest.approx(1.0, abs=1e-4)
    for row in data["time_left"]["kernels"]:
        k = by_kernel[row["kernel"]]
        assert k["state"] == "tuned" and k["default_us"] and k["tuned_us"]
        gap = max(0.0, k["tuned_us"] - k["default_us"]) * row["calls"]
        assert row["left_us"] == pytest.approx(gap, rel=1e-3, abs=1e-4)
        assert ("default wins" in row["why"]) == (gap > 0)

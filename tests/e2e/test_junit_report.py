"""The e2e wrapper reads node's junit report whatever a failure message holds."""

from __future__ import annotations

from tests.e2e.test_vscode import _junit_cases


def test_a_failure_with_terminal_colours_is_read_as_that_one_failure(tmp_path):
    # What node's junit reporter wrote for a playwright timeout: its call log in colour (ESC).
    report = tmp_path / "e2e-junit.xml"
    report.write_text(
        '<?xml version="1.0" encoding="utf-8"?>\n<testsuites>\n'
        '\t<testcase name="passes" time="1.0" classname="test"/>\n'
        '\t<testcase name="times out" time="30.5" classname="test" failure="locator.dblclick: Timeout'
        " 30000ms exceeded.Call log:\x1b[2m  - waiting for locator('row')\x1b[22m\">\n"
        '\t\t<failure type="testCodeFailure" message="Timeout \x1b[2mrow\x1b[22m">\nstack</failure>\n'
        "\t</testcase>\n</testsuites>\n",
        encoding="utf-8",
    )
    cases = {c.get("name"): c.find("failure") for c in _junit_cases(report)}
    assert set(cases) == {"passes", "times out"}
    assert cases["passes"] is None
    failure = cases["times out"]
    assert failure is not None and failure.get("message") == "Timeout [2mrow[22m"

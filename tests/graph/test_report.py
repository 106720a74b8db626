"""``tvm-explorer report`` on a real compiled bundle (profiled, with numerics), opened from disk
in a real headless chromium (playwright-core, ``report_check.mjs``): a node for every layer,
overlay colors that follow the data, the layer panel with code, nothing requested from the
network, and the bundle's strings shown as text (a hostile layer name runs nothing)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest
from tests.conftest import run_cli

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
ARTIFACTS = REPO / "test-artifacts" / "graph"
CHROMIUM = os.environ.get("TVM_EXPLORER_CHROMIUM", "/usr/bin/chromium")
HOSTILE = '</script><script>window.pwned=1</script><img src=x onerror="window.pwned=2">{{7*7}}'
DARKEST, PALEST = "#b10026", "#ffffcc"


def _browser_missing() -> str | None:
    if not shutil.which("node"):
        return "node not found"
    if not (REPO / "node_modules" / "playwright-core").exists():
        return "playwright-core not installed"
    if not Path(CHROMIUM).exists():
        return "chromium not installed"
    if not all((REPO / "server/tvm_explorer/graphview/assets" / f).exists() for f in ("graph.js", "elk.js")):
        return "graph app not built (npm run build)"
    return None


def _check_report(report, shots: str, **gestures: str) -> dict:
    """What report_check.mjs finds in ``report`` in a real browser (its screenshots under
    ARTIFACTS/SHOTS); ``gestures`` go to it as environment variables."""
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    found = subprocess.run(
        ["node", str(HERE / "report_check.mjs"), str(report), str(ARTIFACTS / shots)],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=HERE,
        env={**os.environ, **gestures},
    )
    assert found.returncode == 0, found.stderr
    return json.loads(found.stdout)


@pytest.fixture(scope="module")
def report(bundles, models_dir, tmp_path_factory):
    """(bundle, its costs, the report's findings): small_cnn compiled for llvm with --profile
    and --numerics, one layer renamed to a hostile string, reported and opened in chromium."""
    missing = _browser_missing()
    if missing:
        if os.environ.get("CI"):
            pytest.fail(f"{missing}: run scripts/setup-test.sh")
        pytest.skip(missing)
    compiled = bundles.get(models_dir / "small_cnn_fp32.tflite", "llvm", "--profile", "--numerics")
    bundle = tmp_path_factory.mktemp("report") / "hostile.bundle"
    shutil.copytree(compiled, bundle)
    for name in ("index.json", "costs.json"):
        data = json.loads((bundle / name).read_text())
        data["layers"][3]["name"] = HOSTILE
        (bundle / name).write_text(json.dumps(data))
    out = bundle.parent / "report.html"
    proc = run_cli("report", bundle, "-o", out)
    assert proc.returncode == 0, proc.stderr
    assert "Report written" in proc.stdout
    found = _check_report(
        out,
        "small_cnn",
        GRAPH_SEARCH="conv2d",
        GRAPH_HOVER=str(data["layers"][3]["id"]),
        MEMORY_CLICK=f"0,{json.loads((bundle / 'memory.json').read_text())['peak']['step']}",
    )
    return bundle, json.loads((bundle / "costs.json").read_text()), out, found


def test_every_layer_is_a_node(report):
    bundle, _, _, found = report
    layers = json.loads((bundle / "index.json").read_text())["layers"]
    assert sorted(found["layers"], key=int) == [str(lay["id"]) for lay in layers]


def test_nothing_leaves_the_page(report):
    _, _, out, found = report
    assert found["requests"] == [], found["requests"]
    assert found["errors"] == [], found["errors"]  # a CSP violation is a console error
    text = out.read_text()
    assert "Content-Security-Policy" in text and "default-src 'none'" in text
    markup = text.split("<script")[0]  # the page before its scripts (ELK's text is the first)
    assert "http://" not in markup and "https://" not in markup
    assert '<script type="text/plain" id="tvmx-elk">' in text  # ELK apart from the app, not run by the page


def test_overlay_colors_follow_the_data(report):
    _, costs, _, found = report
    by_time = sorted(costs["layers"], key=lambda lay: lay["time_ms"])
    time = found["fill"]["time"]
    assert time[str(by_time[-1]["id"])] == DARKEST  # the slowest layer is the hottest
    assert time[str(by_time[0]["id"])] == PALEST
    by_code = sorted(costs["layers"], key=lambda lay: lay["code_lines"] + lay.get("shared_code_lines", 0))
    assert found["fill"]["code"][str(by_code[-1]["id"])] == DARKEST
    assert found["fill"]["code"] != time  # another figure, other colors
    assert set(found["fill"]["coverage"].values()) == {"#4daf4a"}  # every layer reaches the code
    assert len(found["fill"]["error"]) == len(found["layers"])  # numerics: every layer observed
    # error relative to each layer's budget: a faithful float build is within every budget
    assert set(found["fill"]["error"].values()) <= {"#ffffcc", "#ffeda0", "#fed976"}
    assert "within its budget" in found["errorLegend"] and "budget" in found["errorCaption"]
    assert any(label.endswith("ms") for label in found["legend"])


def test_the_panel_shows_the_layers_code(report):
    _, costs, _, found = report
    hottest = max(costs["layers"], key=lambda lay: lay["time_ms"])
    assert found["hot"] == str(hottest["id"])  # the hot-layers table leads with it
    assert found["selected"] == [str(hottest["id"])]
    assert found["panel"]["title"].startswith(hottest["opcode"])
    assert found["panel"]["stages"] == ["model", "relax", "tir", "code"]
    # the kernel's generated function: its name on the place, its statements in the excerpt
    assert any(hottest["kernels"][0] in f for f in found["panel"]["functions"]), found["panel"]["functions"]
    assert found["panel"]["code"][-1].strip()


def test_search_and_groups(report):
    _, _, _, found = report
    assert found["matches"] and all(m in found["layers"] for m in found["matches"])
    assert found["collapsedLayers"] < len(found["layers"])
    assert found["expandedLayers"] == len(found["layers"])


def test_reopening_draws_the_same_view_without_elk(report):
    _, _, _, found = report
    assert found["reopened"]["laidOut"] == 0  # every container from the kept layouts
    assert found["reopened"]["opening"] == found["opening"]  # each box where ELK put it


def test_bundle_strings_are_text(report):
    _, _, out, found = report
    assert found["pwned"] is None and found["images"] == 0
    assert HOSTILE in found["tip"]  # shown as the name it is (the node's tooltip)
    assert "</script><script>window.pwned" not in out.read_text()


def test_the_memory_timeline_marks_the_peak_and_a_band_opens_its_layer(report):
    """The report's memory timeline (memory.json): the peak in its heading, the storages held
    there listed; a click on storage #0's band at the peak selects the layer whose tensor it
    holds then and names that tensor's allocation line in Relax."""
    bundle, _, _, found = report
    memory = json.loads((bundle / "memory.json").read_text())
    peak = memory["peak"]
    got = found["memory"]
    assert isinstance(got, dict), got
    assert got["heading"].startswith(f"Peak {peak['bytes'] / 1024:.1f} KiB at step {peak['step']} (")
    held = [
        s["id"]
        for s in memory["storages"]
        if s["first_step"] is not None and s["first_step"] <= peak["step"] <= s["last_step"]
    ]
    assert sorted(got["listed"]) == sorted(held)
    tensor = next(
        t for t in memory["tensors"] if t["storage"] == 0 and t["first_step"] <= peak["step"] <= t["last_step"]
    )
    assert got["selected"] == [str(tensor["layer"])]
    path = memory["analysed"]["document"]
    lines = (bundle / path).read_text().split("\n")
    line = next(
        i for i, text in enumerate(lines) if text.strip().startswith(f"{tensor['var']}: ") and "alloc_tensor(" in text
    )
    assert got["alloc"] == f"{path}:{line + 1}"
    # the clicked storage's tensors, each named with its layer (text, whatever the name holds)
    assert f"Storage #0 ({memory['storages'][0]['bytes'] / 1024:.1f} KiB" in got["details"]
    assert f"{tensor['var']} [" in got["details"] and "output of CONV_2D" in got["details"]


def test_the_memory_timeline_draws_the_measured_run_over_the_plan(report):
    """The bundle is profiled on llvm: the picture draws the bytes the run (VM naive allocator)
    held after each step as a line over the bands, its peak's point marked, and the caption
    line says where it was measured, its peak beside the static one and the verdict."""
    bundle, _, _, found = report
    memory = json.loads((bundle / "memory.json").read_text())
    m, got = memory["measured"], found["memory"]
    assert got["measuredStatus"] == "measured" == m["status"]
    assert got["caption"].startswith(f"measured on this machine: peak {m['naive_peak_bytes'] / 1024:.1f} KiB (static ")
    assert ", within the tolerance of 5 % + 256.0 KiB), VM naive allocator; pooled (TVM's default): " in got["caption"]
    line = got["line"]
    assert line["label"].startswith("measured on this machine after each kernel call, VM naive allocator")
    # drawn in the axis' unit and read back: the samples to the byte, none where no kernel ran
    assert [v is None for v in line["bytes"]] == [v is None for v in m["steps"]]
    assert all(abs(a - b) <= 1 for a, b in zip(line["bytes"], m["steps"]) if b is not None)
    assert line["peak"] is not None and line["peak"]["x"] > 0 and line["peak"]["y"] > 0


def test_bad_input_is_one_message(bundles, models_dir, tmp_path):
    """No bundle, a directory as the output, a damaged costs.json: one message each, and the
    report of the damaged bundle names the file (nothing half-written is left behind)."""
    missing = run_cli("report", tmp_path / "nothing", "-o", tmp_path / "r.html")
    assert missing.returncode == 2 and "not a bundle directory" in missing.stderr
    assert "Traceback" not in missing.stderr and not (tmp_path / "r.html").exists()
    bundle = tmp_path / "damaged.bundle"
    shutil.copytree(bundles.get(models_dir / "small_cnn_fp32.tflite", "c"), bundle)
    into_dir = run_cli("report", bundle, "-o", tmp_path)
    assert into_dir.returncode == 2 and "is a directory" in into_dir.stderr
    (bundle / "costs.json").write_text("{bad")
    damaged = run_cli("report", bundle, "-o", tmp_path / "r.html")
    assert damaged.returncode == 0, damaged.stderr
    assert "costs.json: costs file is not readable JSON" in (tmp_path / "r.html").read_text()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["damaged.bundle", "r.html"]


def _umask_run(mask, *args):
    old = os.umask(mask)
    try:
        return run_cli(*args)
    finally:
        os.umask(old)


def test_the_report_honours_the_umask(bundles, models_dir, tmp_path):
    """A new report gets 0666 less the umask, as any other program's file would (it was 0600,
    the atomic writer's private temporary file); a replaced one keeps the mode it was given."""
    bundle = bundles.get(models_dir / "small_cnn_fp32.tflite", "c")
    shared, group = tmp_path / "shared.html", tmp_path / "group.html"
    assert _umask_run(0o022, "report", bundle, "-o", shared).returncode == 0
    assert _umask_run(0o002, "report", bundle, "-o", group).returncode == 0
    assert (shared.stat().st_mode & 0o777, group.stat().st_mode & 0o777) == (0o644, 0o664)
    shared.chmod(0o640)
    assert _umask_run(0o022, "report", bundle, "-o", shared).returncode == 0
    assert shared.stat().st_mode & 0o777 == 0o640
    assert sorted(p.name for p in tmp_path.iterdir()) == ["group.html", "shared.html"]


@pytest.fixture(scope="module")
def gt_report(bundles, gt_model, tmp_path_factory):
    """(bundle, the report's findings) for the conv → add → relu → reshape → dense model, whose
    conv, add and relu FuseOps fuses into one function."""
    missing = _browser_missing()
    if missing:
        if os.environ.get("CI"):
            pytest.fail(f"{missing}: run scripts/setup-test.sh")
        pytest.skip(missing)
    bundle = bundles.get(gt_model, "c")
    out = tmp_path_factory.mktemp("gt-report") / "report.html"
    assert run_cli("report", bundle, "-o", out).returncode == 0
    return bundle, _check_report(out, "gt")


def test_the_pass_slider_scrubs_the_pipeline_with_the_layout_still(gt_report):
    """Issue 41: scrubbed by keyboard from the first pass to the last, the graph marks what each
    pass touched, frames the layers fused together and marks what is lowered, and no box moves."""
    from tvm_explorer.bundle.reader import Bundle
    from tvm_explorer.graphview.document import graph_document
    from tvm_explorer.navigation.view import BundleView

    bundle, found = gt_report
    assert not found["errors"], found["errors"]
    passes = graph_document(BundleView(Bundle(bundle)), places=False)["pipeline"]["passes"]
    slider = found["slider"]
    print(f"slider steps: {len(slider['steps'])}, slowest {max(slider['steps']):.1f} ms (a target is in bench/)")
    first = slider["first"]
    assert first["caption"].startswith(f"1/{len(passes)} import (relax): ") and first["lowered"] == []
    assert sorted(first["touched"]) == sorted(passes[0]["touched"])
    fuse = slider["fuse"]
    fuse_pass = next(p for p in passes if p["name"] == "FuseOps")
    assert sorted(fuse["touched"], key=int) == fuse_pass["touched"]
    assert fuse["frames"] == [["0", "1", "2"]], "FuseOps' group is framed"
    assert sorted(fuse["lowered"], key=int) == ["0", "1", "2", "3", "4"], "LegalizeOps came before"
    assert " 1 fused group " in fuse["caption"]
    last = slider["last"]
    assert last["caption"].startswith(f"{len(passes)}/{len(passes)} codegen") and last["frames"] == [["0", "1", "2"]]
    assert slider["still"], "a box moved while scrubbing"
    off = slider["off"]
    assert off["touched"] == [] and off["frames"] == [] and off["lowered"] == []

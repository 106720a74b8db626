"""Shared fixtures: real models, and bundles compiled once per test session."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from tests import bundle_store

# The tests import the CLI's runners from here.
from tests.cli_runner import CLI as CLI
from tests.cli_runner import run_cli as run_cli

MODELS = Path(__file__).parent / "models"
# Seconds each test file took (scripts/test-durations.py writes it from a run's report).
FILE_SECONDS = Path(__file__).parent / "file_seconds.json"


def pytest_collection_modifyitems(config, items):
    """The longest test files first: scripts/test.sh hands whole files to parallel workers
    (pytest-xdist's loadfile, in this order), and a long file started last would run alone at
    the end. Within a file the order is the file's own."""
    try:
        seconds = json.loads(FILE_SECONDS.read_text())
    except (OSError, ValueError):
        return
    rank = {path: -cost for path, cost in seconds.items()}
    items.sort(key=lambda item: rank.get(item.nodeid.split("::", 1)[0], 0))


@pytest.fixture(scope="session")
def models_dir() -> Path:
    return MODELS


@pytest.fixture(scope="session")
def gt_model() -> Path:
    """CONV_2D → ADD → RELU → RESHAPE → FULLY_CONNECTED, built by the test (ground truth), at
    a fixed place (test-artifacts/models/gt.tflite): its bundles are kept between runs."""
    from tests.tflite_builder import conv_add_relu_dense

    return bundle_store.built_model("gt.tflite", conv_add_relu_dense())


class BundleCache:
    """Compile each (model, target, options) once through the real CLI: kept between runs in
    tests/bundle_store.py's content-keyed store (shared with the editor tests), copied once per
    session into this session's folder, which the tests share."""

    def __init__(self, root: Path):
        self.root = root
        self._done: dict[tuple, Path] = {}

    def get(self, model: Path, target: str = "c", *extra: str) -> Path:
        key = (str(model), target, extra)
        if key not in self._done:
            out = self.root / f"{Path(model).stem}.{target}{''.join(extra).replace('-', '_')}.bundle"
            shutil.copytree(bundle_store.compiled(model, target, extra), out)
            self._done[key] = out
        return self._done[key]


@pytest.fixture(scope="session")
def bundles(tmp_path_factory) -> BundleCache:
    return BundleCache(tmp_path_factory.mktemp("bundles"))


class LLMBundles:
    """Tiny Hugging Face models (tests/llm_models.py) exported and compiled for target c once
    per session, each in a folder of its own (an editor workspace): ``get("llama")``."""

    def __init__(self, root: Path):
        self.root = root
        self._done: dict[str, Path] = {}

    def program(self, name: str) -> Path:
        """The exported program (``.pt2``) of ``name``, exported once."""
        from tests import llm_models

        path = self.root / name / f"{name}.pt2"
        if not path.exists():
            path.parent.mkdir(exist_ok=True)
            llm_models.export(name, path)
        return path

    def get(self, name: str) -> Path:
        """Its bundle for target c, profiled and with numerics (one compile serves the source,
        rollup and C-target tests alike), beside its program. Compiled from a copy of the
        program at a fixed place (test-artifacts/models), through tests/bundle_store.py's store:
        the same export compiled before is not compiled again."""
        if name not in self._done:
            program = self.program(name)
            kept = bundle_store.built_model(program.name, program.read_bytes())
            out = program.with_suffix(".bundle")
            shutil.copytree(bundle_store.compiled(kept, "c", ("--profile", "--numerics")), out)
            self._done[name] = out
        return self._done[name]


@pytest.fixture(scope="session")
def llm_bundles(tmp_path_factory) -> LLMBundles:
    pytest.importorskip("transformers", reason="transformers is not installed (pip install -e '.[test]')")
    return LLMBundles(tmp_path_factory.mktemp("llm"))

"""Models of the memory tests, built once per session; their bundles come from the session's
``bundles`` cache (tests/conftest.py), so a bundle another test compiled is not compiled
again."""

from __future__ import annotations

from pathlib import Path

import pytest

from .models import onnx_chain, onnx_dynamic, torch_residual


@pytest.fixture(scope="session")
def memory_models(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("memory-models")


@pytest.fixture(scope="session")
def chain_bundle(bundles, memory_models) -> Path:
    """The ONNX MatMul chain on llvm, profiled (one timed run: the memory runs come first)."""
    model = onnx_chain(memory_models / "chain.onnx")
    return bundles.get(model, "llvm", "--profile", "--repeat", "1")


@pytest.fixture(scope="session")
def residual_bundle(bundles, memory_models) -> Path:
    pytest.importorskip("torch")
    return bundles.get(torch_residual(memory_models / "residual.pt2"), "c")


@pytest.fixture(scope="session")
def dynamic_model(memory_models) -> Path:
    return onnx_dynamic(memory_models / "dynamic.onnx")

"""Models with ground truth by construction for the numerics tests."""

from __future__ import annotations

import pytest

from .planted import planted_reference


@pytest.fixture(scope="session")
def planted(tmp_path_factory):
    """(model, reference with the ADD's bias (op 1) changed)."""
    return planted_reference(tmp_path_factory.mktemp("planted"), "add/bias")

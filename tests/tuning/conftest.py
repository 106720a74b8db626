"""The tuned bundle the tuning tests share (compiled once per session)."""

from __future__ import annotations

import shutil
from pathlib import Path
from types import SimpleNamespace

import pytest
from tests.conftest import run_cli
from tests.tuning.mlp import write_mlp

SHIPPED = Path(__file__).parent.parent / "models" / "tuning-db-mlp"
DB_FILES = ("database_workload.json", "database_tuning_record.json")


@pytest.fixture(scope="session")
def tuned(tmp_path_factory):
    """The MLP compiled with --tune 4 and the shipped database, which knows every kernel."""
    root = tmp_path_factory.mktemp("tuning")
    model = write_mlp(root / "mlp.onnx")
    db = root / "db"
    db.mkdir()
    for name in DB_FILES:
        shutil.copyfile(SHIPPED / name, db / name)
    before = {name: (db / name).read_bytes() for name in DB_FILES}
    out = root / "mlp.bundle"
    proc = run_cli("compile", model, "--target", "llvm", "--tune", "4", "--tuning-db", db, "-o", out, check=True)
    return SimpleNamespace(model=model, db=db, before=before, bundle=out, stdout=proc.stdout)

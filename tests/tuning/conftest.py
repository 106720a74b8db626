"""The tuned bundle the tuning tests share (compiled once per session)."""

from __future__ import annotations

import shutil
from pathlib import Path
from types import SimpleNamespace

import pytest
from tests.tuning.mlp import compile_tuned, write_mlp

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
    proc = compile_tuned(model, out, 4, "--tuning-db", db)
    return SimpleNamespace(model=model, db=db, before=before, bundle=out, stdout=proc.stdout)


@pytest.fixture(scope="session")
def missed(tuned, tmp_path_factory):
    """The MLP with 8 rows, compiled with --tune 0 and the database tuned for 4 rows: every
    kernel a database miss (the same layers as ``tuned``'s, which are tuned); profiled."""
    root = tmp_path_factory.mktemp("tuning-miss")
    model = write_mlp(root / "mlp8.onnx", rows=8)
    out = root / "mlp8.bundle"
    proc = compile_tuned(model, out, 0, "--tuning-db", tuned.db, "--profile")
    return SimpleNamespace(model=model, bundle=out, stdout=proc.stdout)

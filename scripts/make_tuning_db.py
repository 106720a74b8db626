"""Tune the tuning tests' MLP (tests/tuning/mlp.py) once into tests/models/tuning-db-mlp/, the
MetaSchedule database the tests apply (reused, never re-tuned: the tests stay cheap).

    python scripts/make_tuning_db.py [TRIALS]

Runs ``tvm-explorer compile --tune`` itself, so the database holds exactly the fused kernels
tvm-explorer's tuning pipeline extracts (after FuseOps/FuseTIR). A few minutes on 2 cores.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DATABASE = ROOT / "tests" / "models" / "tuning-db-mlp"


def main() -> int:
    trials = int(sys.argv[1]) if len(sys.argv) > 1 else 8
    sys.path.insert(0, str(ROOT / "tests" / "tuning"))
    from mlp import write_mlp

    with tempfile.TemporaryDirectory() as tmp:
        model = write_mlp(Path(tmp) / "mlp.onnx")
        fresh = Path(tmp) / "db"
        cmd = [sys.executable, "-m", "tvm_explorer", "compile", str(model), "--target", "llvm", "--tune", str(trials)]
        cmd += ["--tuning-db", str(fresh), "-o", str(Path(tmp) / "bundle"), "--timeout", "0"]
        subprocess.run(cmd, check=True)
        subprocess.run([sys.executable, "-m", "tvm_explorer", "tuning", str(Path(tmp) / "bundle")], check=True)
        if DATABASE.exists():
            shutil.rmtree(DATABASE)
        DATABASE.mkdir(parents=True)
        for name in ("database_workload.json", "database_tuning_record.json"):
            shutil.copyfile(fresh / name, DATABASE / name)
    print(f"wrote {DATABASE}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env bash
# Run the whole test suite (sets up first; setup is idempotent and fast when done).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
.venv/bin/python -m pytest "$@"

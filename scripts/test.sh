#!/usr/bin/env bash
# Run the whole test suite (sets up the product and the test stack first; both are idempotent
# and fast when done).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup-test.sh
.venv/bin/python -m pytest "$@"

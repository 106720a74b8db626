#!/usr/bin/env bash
# Run the whole test suite (sets up the product and the test stack first; both are idempotent
# and fast when done): the project's own checks (docs/architecture.md: import layers, lint,
# format, types), then every test.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup-test.sh
echo "checks: lint-imports, ruff check, ruff format --check, mypy"
.venv/bin/lint-imports --no-cache
.venv/bin/ruff check
.venv/bin/ruff format --check
.venv/bin/mypy
.venv/bin/python -m pytest --durations=40 "$@"

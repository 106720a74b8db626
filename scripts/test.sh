#!/usr/bin/env bash
# Run the whole test suite (sets up the product and the test stack first; both are idempotent
# and fast when done): the project's own checks (docs/architecture.md: import layers, lint,
# format, types; eslint and prettier on the extension's TypeScript), then every test.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup-test.sh
echo "checks: lint-imports, ruff check, ruff format --check, mypy, eslint, prettier --check"
.venv/bin/lint-imports --no-cache
.venv/bin/ruff check
.venv/bin/ruff format --check
.venv/bin/mypy
npx --no-install eslint vscode-extension/src vscode-extension/webview
npx --no-install prettier --check vscode-extension/src vscode-extension/webview
# Test files run in parallel: a worker a core and one more (many tests wait on subprocesses and
# the editor), at most 4 (TVM_EXPLORER_TEST_WORKERS to choose; 0: in this process), the longest
# files first (tests/conftest.py). scripts/test-durations.py reads the report test-artifacts/junit.xml.
workers=${TVM_EXPLORER_TEST_WORKERS:-$(( $(nproc) < 3 ? $(nproc) + 1 : 4 ))}
.venv/bin/python -m pytest -n "$workers" --dist loadfile --no-loadscope-reorder \
  --junit-xml=test-artifacts/junit.xml --durations=40 "$@"

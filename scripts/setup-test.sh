#!/usr/bin/env bash
# Set up what TESTING TVM Explorer needs, on top of scripts/setup.sh: the Python test tools
# (pytest, pytest-lsp, hypothesis), NVIDIA's compiler wheels for --sass (the [sass] extra), TFLite Micro (the [micro] extra), MetaSchedule's packages for compile --tune (the [tune] extra), PyTorch for the .pt2 tests (the optional extra, pinned to
# its CPU build: torch==2.13.0), and the real-editor test stack (scripts/setup-e2e.sh:
# Debian's chromium and build packages through apt, code-server from npm). Idempotent.
set -euo pipefail
cd "$(dirname "$0")/.."
# The full npm workspace first: it includes the extension toolchain that setup.sh would
# otherwise install on its own (npm ci replaces node_modules/ each time).
bash scripts/setup-e2e.sh
bash scripts/setup.sh
if [ ! -f .venv/.installed-test ] || [ pyproject.toml -nt .venv/.installed-test ]; then
  printf '[setup-test] %s\n' "pip install -e .[test,torch,sass,micro,tune]"
  .venv/bin/python -m pip install -q -e ".[test,torch,sass,micro,tune]"
  touch .venv/.installed-test
fi
echo "setup-test: ok (test tools, code-server, chromium)"

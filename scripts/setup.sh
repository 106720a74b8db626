#!/usr/bin/env bash
# Set up everything TVM Explorer needs, from this repository's own files. Idempotent (a second
# run only re-checks). Python: .venv/ with the tvm_explorer package (TVM, tflite, onnx, pygls,
# and the optional PyTorch extra, torch==2.13.0 CPU, so the .pt2 tests run).
# Node: the VS Code extension toolchain and its real-editor test stack (scripts/setup-e2e.sh:
# Debian's chromium, code-server from npm), then the extension package dist/tvm-explorer.vsix.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  "$PY" -m venv .venv
fi
if [ ! -f .venv/.installed ] || [ pyproject.toml -nt .venv/.installed ]; then
  .venv/bin/python -m pip install -q --upgrade pip
  .venv/bin/python -m pip install -q -e ".[test,torch]"  # torch: the pinned CPU build
  touch .venv/.installed
fi
bash scripts/setup-e2e.sh
if [ ! -f dist/tvm-explorer.vsix ] || [ -n "$(find vscode-extension -newer dist/tvm-explorer.vsix -not -path '*/node_modules/*' -not -path '*/out/*' -print -quit)" ]; then
  npm run --silent package >/dev/null
fi
echo "setup: ok (.venv/, dist/tvm-explorer.vsix)"

#!/usr/bin/env bash
# Set up what USING TVM Explorer needs, from this repository's own files, without root: .venv/
# with the tvm_explorer package and its pinned dependencies (TVM, tflite, pygls, rich), and the
# VS Code extension package dist/tvm-explorer.vsix (built with the extension's npm toolchain:
# TypeScript, esbuild, vsce). Nothing from apt, no code-server, no browser: the real-editor test
# stack is scripts/setup-test.sh. Idempotent (a second run only re-checks).
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
log() { printf '[setup] %s\n' "$*"; }

if [ ! -x .venv/bin/python ]; then
  "$PY" -m venv .venv
fi
if [ ! -f .venv/.installed ] || [ pyproject.toml -nt .venv/.installed ]; then
  log "pip install -e . (tvm_explorer and its pinned dependencies)"
  .venv/bin/python -m pip install -q --upgrade pip
  .venv/bin/python -m pip install -q -e .
  touch .venv/.installed
fi

# The extension's build toolchain only (the npm workspace vscode-extension). A full install of
# the workspace (scripts/setup-e2e.sh, for the tests) includes it.
toolchain_ready() {
  for marker in node_modules/.e2e-installed node_modules/.extension-installed; do
    if [ -f "$marker" ] && [ "$marker" -nt package-lock.json ]; then
      return 0
    fi
  done
  return 1
}
if ! toolchain_ready; then
  log "npm ci --workspace vscode-extension (extension toolchain)"
  npm_config_fund=false npm_config_audit=false npm_config_update_notifier=false \
    npm ci --workspace vscode-extension --no-progress </dev/null
  touch node_modules/.extension-installed
fi
# (The build also writes the graph app that `tvm-explorer report` inlines: graphview/assets/.)
if [ ! -f dist/tvm-explorer.vsix ] || [ ! -f server/tvm_explorer/graphview/assets/graph.js ] || [ ! -f server/tvm_explorer/graphview/assets/elk.js ] || [ -n "$(find vscode-extension -newer dist/tvm-explorer.vsix -not -path '*/node_modules/*' -not -path '*/out/*' -print -quit)" ]; then
  log "building dist/tvm-explorer.vsix"
  npm run --silent package >/dev/null
fi
log "ok (.venv/, dist/tvm-explorer.vsix)"

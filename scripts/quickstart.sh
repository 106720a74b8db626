#!/usr/bin/env bash
# Set up TVM Explorer and compile the bundled example model into a bundle.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
.venv/bin/tvm-explorer compile examples/small_cnn_fp32.tflite -o examples/small_cnn_fp32.bundle --target c
cat <<MSG

To explore it in VS Code, install the extension once and open the bundle:
  code --install-extension dist/tvm-explorer.vsix
  code examples/small_cnn_fp32.bundle
(docs/vscode.md: settings, the pass view, and using the same server from Neovim.)
MSG

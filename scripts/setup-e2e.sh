#!/usr/bin/env bash
# Install everything the VS Code extension build and its real-editor e2e tests need, from this
# repository's own files: Debian packages (chromium, ripgrep, neovim for its LSP test, native build deps), then the npm
# workspace (extension toolchain, code-server 4.100.3, playwright-core) from package-lock.json.
#
# Works unattended as root on a fresh Debian 12 / Node 20 machine (CI=true, no stdin).
# Idempotent: a second run only re-checks. Environment knobs:
#   SKIP_APT=1        do not touch apt (packages already there)
#   NPM_CI_ARGS=...   extra arguments for `npm ci`
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$(pwd)

APT_PACKAGES=(
  chromium ripgrep fonts-dejavu-core neovim
  build-essential pkg-config python3
  libx11-dev libxkbfile-dev libsecret-1-dev libkrb5-dev
  gcc-aarch64-linux-gnu libc6-dev-arm64-cross
)

log() { printf '[setup-e2e] %s\n' "$*"; }

install_apt() {
  local missing=()
  for p in "${APT_PACKAGES[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  if [ "${#missing[@]}" -eq 0 ]; then
    log "apt packages present"
    return
  fi
  log "apt-get install ${missing[*]}"
  local sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  export DEBIAN_FRONTEND=noninteractive
  $sudo apt-get update -qq
  $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" </dev/null
}

# @vscode/ripgrep's postinstall downloads rg from the internet unless it finds this tarball in
# its cache under $TMPDIR; a tarball of Debian's rg satisfies it (code-server pins the version).
seed_ripgrep_cache() {
  local cache="$TMPDIR/vscode-ripgrep-cache-1.15.11"
  mkdir -p "$cache"
  local stage
  stage=$(mktemp -d)
  cp "$(command -v rg)" "$stage/rg"
  for name in ripgrep-v13.0.0-10-x86_64-unknown-linux-musl ripgrep-v13.0.0-13-x86_64-unknown-linux-musl; do
    tar -czf "$cache/$name.tar.gz" -C "$stage" rg
  done
  rm -rf "$stage"
}

# A subshell function: its TMPDIR and npm_config_* settings end with it.
install_npm() (
  if [ -x node_modules/.bin/code-server ] && [ -f node_modules/.e2e-installed ] \
     && [ node_modules/.e2e-installed -nt package-lock.json ]; then
    log "npm workspace already installed"
    return
  fi
  TMPDIR=$(mktemp -d)
  export TMPDIR
  seed_ripgrep_cache
  # node-pty's postinstall runs `npx node-gyp` (answer prompts: yes); node-gyp must use the
  # system Node headers instead of downloading them.
  export npm_config_yes=true npm_config_nodedir=/usr npm_config_fund=false npm_config_audit=false
  export npm_config_update_notifier=false
  # code-server's postinstall refuses to run as root without this (older npm spelling).
  export npm_config_unsafe_perm=true
  log "npm ci (extension toolchain, code-server 4.100.3, playwright-core)"
  # shellcheck disable=SC2086
  npm ci --no-progress ${NPM_CI_ARGS:-} </dev/null
  rm -rf "$TMPDIR"
  touch node_modules/.e2e-installed
)

check() {
  local cs="$ROOT/node_modules/.bin/code-server" vs="$ROOT/node_modules/code-server/lib/vscode"
  # Native modules built by code-server's nested install: fail loudly if a script was skipped.
  test -f "$vs/node_modules/node-pty/build/Release/pty.node" || { log "node-pty not built"; exit 1; }
  test -x "$vs/node_modules/@vscode/ripgrep/bin/rg" || { log "ripgrep missing in code-server"; exit 1; }
  # --version writes a default config into XDG_CONFIG_HOME: keep it out of the home directory.
  local state
  state=$(mktemp -d)
  local version
  version=$(XDG_CONFIG_HOME="$state" XDG_DATA_HOME="$state" "$cs" --version | tail -1)
  rm -rf "$state"
  test -x /usr/bin/chromium
  log "ok: code-server $version; $(/usr/bin/chromium --version 2>/dev/null | head -1)"
}

[ "${SKIP_APT:-0}" = 1 ] || install_apt
install_npm
check

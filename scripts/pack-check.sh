#!/usr/bin/env bash
# The pack-and-install check: teamctl installed like any CLI. Packs the repository (`npm pack`,
# which builds dist/ first), installs the tarball into a temporary prefix (`npm install -g
# --prefix`), and runs both commands from there on the project's Node 24 and on Node 22 (from
# npm: `npx -p node@22`): --version, `teamctl validate` of an example, `acs-server start
# --in-memory --port 0` with `acs-server wait`, an apply, a plan that finds nothing to do, the
# console's page and script (built into the package), and a stop by SIGTERM that must end the
# server with status 0. With TEMPORAL_ADDRESS set (run it inside scripts/with-temporal.sh) a
# `teamctl worker` from the package also runs a pipeline on Temporal, which proves the worker
# bundles the installed workflow modules. On Node 20 the commands must print the one line naming
# the Node they need. Nothing is left behind: the temporary directory is removed and every process
# it started is stopped.
#
# Usage: bash scripts/pack-check.sh            (PACK_CHECK_NODES="24 22" by default)
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$PWD

work=$(mktemp -d "${TMPDIR:-/tmp}/teamctl-pack.XXXXXX")
pids=()
cleanup() {
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT

say() { printf 'pack-check: %s\n' "$*"; }
fail() { printf 'pack-check: FAILED: %s\n' "$*" >&2; exit 1; }

# The real binary of a Node release line from npm's `node` package (cached by npx after the first use).
node_of() {
  if [ "$1" = 24 ]; then printf '%s\n' "$repo/node_modules/node/bin/node"; return; fi
  npx --yes -p "node@$1" node -p process.execPath 2>/dev/null | tail -n 1
}

version=$("$(node_of 24)" -p 'require("./package.json").version')
say "packing teamctl $version"
tarball=$(npm pack --pack-destination "$work" --silent 2>/dev/null | tail -n 1)
[ -f "$work/$tarball" ] || fail "npm pack produced no tarball"
prefix="$work/prefix"
npm install --global --prefix "$prefix" --no-audit --no-fund --loglevel=error "$work/$tarball" >/dev/null 2>"$work/install.log" \
  || { cat "$work/install.log" >&2; fail "npm install -g of $tarball"; }
package="$prefix/lib/node_modules/teamctl"
say "installed into $prefix"

# Runs one installed command with the given Node first on PATH, from a directory outside the clone;
# exec, so that the pid of a command started with & is the command's own (signals reach it).
run_with() {
  local node_dir=$1
  shift
  (cd "$work" && PATH="$node_dir:$prefix/bin:$PATH" exec "$@")
}

check_on() {
  local line=$1 node node_dir
  node=$(node_of "$line")
  [ -x "$node" ] || fail "no Node $line"
  node_dir=$(dirname "$node")
  say "Node $("$node" --version): --version, validate"
  [ "$(run_with "$node_dir" teamctl --version)" = "$version" ] || fail "teamctl --version on Node $line"
  [ "$(run_with "$node_dir" acs-server --version)" = "$version" ] || fail "acs-server --version on Node $line"
  run_with "$node_dir" teamctl validate -f "$package/examples/acme-research.yaml" >/dev/null || fail "teamctl validate on Node $line"

  say "Node $line: acs-server start, wait, apply, plan"
  local creds="$work/dev-$line.json" server
  # Not through run_with: a function run with & is a subshell of its own, whose pid $! would be.
  (cd "$work" && PATH="$node_dir:$prefix/bin:$PATH" exec acs-server start --in-memory --port 0 --dev-credentials "$creds" --log-format json) >"$work/server-$line.log" 2>&1 &
  server=$!
  pids+=("$server")
  run_with "$node_dir" acs-server wait --dev-credentials "$creds" --timeout 120 || { cat "$work/server-$line.log" >&2; fail "acs-server did not start on Node $line"; }
  local base_url api_key
  base_url=$("$node" -p "require('$creds').base_url")
  api_key=$("$node" -p "require('$creds').api_key")
  export ACS_BASE_URL=$base_url ACS_API_KEY=$api_key ECHO_PROVIDER_KEY=pack-check
  run_with "$node_dir" teamctl apply -f "$package/examples/triage.yaml" >/dev/null || fail "teamctl apply on Node $line"
  run_with "$node_dir" teamctl plan -f "$package/examples/triage.yaml" --detailed-exitcode >/dev/null || fail "teamctl plan after apply on Node $line"
  # The console comes built in the package (dist/console/): its page names its script, which is served.
  local script
  script=$("$node" -e "fetch(process.argv[1] + '/inbox').then((r) => r.text()).then((t) => console.log((/src=\"(\/assets\/[^\"]+)\"/.exec(t) || [])[1] || ''))" "$base_url")
  [ -n "$script" ] || fail "the installed acs-server serves no console page on Node $line"
  "$node" -e "fetch(process.argv[1]).then((r) => process.exit(r.ok ? 0 : 1))" "$base_url$script" || fail "the installed acs-server does not serve the console's $script on Node $line"

  if [ -n "${TEMPORAL_ADDRESS:-}" ]; then
    say "Node $line: teamctl worker runs a pipeline on Temporal ($TEMPORAL_ADDRESS)"
    local queue="pack-check-$line-$$" worker
    (cd "$work" && PATH="$node_dir:$prefix/bin:$PATH" exec teamctl worker --task-queue "$queue") >"$work/worker-$line.log" 2>&1 &
    worker=$!
    pids+=("$worker")
    # As the server is waited for above: the worker bundles the installed workflows before it
    # polls, which on a busy machine can take longer than the 5 s a run waits for a worker.
    local waited=0
    until grep -q '^teamctl worker polling task queue' "$work/worker-$line.log"; do
      kill -0 "$worker" 2>/dev/null || { cat "$work/worker-$line.log" >&2; fail "teamctl worker exited before it polled on Node $line"; }
      [ "$waited" -lt 120 ] || { cat "$work/worker-$line.log" >&2; fail "teamctl worker did not poll within 120 s on Node $line"; }
      sleep 1
      waited=$((waited + 1))
    done
    run_with "$node_dir" teamctl run triage -f "$package/examples/triage.yaml" --input ticket=T-1 --engine temporal --task-queue "$queue" >"$work/run-$line.log" 2>&1 \
      || { cat "$work/run-$line.log" "$work/worker-$line.log" >&2; fail "teamctl run on Temporal on Node $line"; }
    grep -q '^output: ' "$work/run-$line.log" || fail "the pipeline run printed no output on Node $line"
    kill -TERM "$worker"
    local worker_status=0
    wait "$worker" || worker_status=$?
    [ "$worker_status" = 0 ] || { cat "$work/worker-$line.log" >&2; fail "teamctl worker exited $worker_status on SIGTERM on Node $line"; }
  fi

  kill -TERM "$server"
  wait "$server" || { cat "$work/server-$line.log" >&2; fail "acs-server did not stop cleanly on SIGTERM on Node $line"; }
  unset ACS_BASE_URL ACS_API_KEY ECHO_PROVIDER_KEY
}

for line in ${PACK_CHECK_NODES:-24 22}; do check_on "$line"; done

# Hints name what works where teamctl is installed: the binaries on PATH and the Temporal CLI's own
# dev server, never the clone's `npx acs-server` (which would ask the npm registry) or `npm run`.
say "hints of the installed teamctl"
node24_dir=$(dirname "$(node_of 24)")
closed_port=$("$(node_of 24)" -e 'const s=require("net").createServer().listen(0,"127.0.0.1",()=>{console.log(s.address().port);s.close()})')
set +e
unreachable=$(ACS_BASE_URL="http://127.0.0.1:$closed_port" ACS_API_KEY=pack-check ECHO_PROVIDER_KEY=pack-check run_with "$node24_dir" teamctl plan -f "$package/examples/acme-research.yaml" 2>&1)
no_temporal=$(ACS_BASE_URL="http://127.0.0.1:$closed_port" ACS_API_KEY=pack-check TEMPORAL_ADDRESS=127.0.0.1:1 run_with "$node24_dir" teamctl worker 2>&1)
set -e
case "$unreachable" in
  *'hint: is acs-server running at '*'Start one with `acs-server start`'*) ;;
  *) fail "the installed teamctl's hint for an unreachable service: $unreachable" ;;
esac
case "$no_temporal" in
  *'hint: start one with `temporal server start-dev`'*) ;;
  *) fail "the installed teamctl's hint for an unreachable Temporal: $no_temporal" ;;
esac
case "$unreachable$no_temporal" in
  *npx*|*'npm run'*) fail "an installed teamctl's hint names a command of the clone: $unreachable $no_temporal" ;;
esac

say "Node 20: one line naming the Node needed"
node20=$(node_of 20)
set +e
message=$(cd "$work" && "$node20" "$prefix/bin/teamctl" --version 2>&1)
status=$?
set -e
[ "$status" = 1 ] || fail "teamctl on Node 20 exited $status"
case "$message" in
  "teamctl: needs Node.js "*" or later"*) ;;
  *) fail "teamctl on Node 20 said: $message" ;;
esac
[ "$(printf '%s\n' "$message" | wc -l)" = 1 ] || fail "teamctl on Node 20 printed more than one line: $message"
say "passed"

#!/usr/bin/env bash
# Runs a command next to a throwaway PostgreSQL cluster, then stops and deletes the cluster.
#
#   scripts/with-postgres.sh [--install] [--fast] -- COMMAND [ARGS...]
#
# The cluster lives in a fresh temp dir, listens on 127.0.0.1 only (a free port, retried when
# another process takes it first), trusts loopback connections and is stopped on exit, so two
# runs on one machine never collide. COMMAND sees ACS_POSTGRES_URL (superuser `postgres`,
# database `postgres`) and the exit status of COMMAND is the script's.
#   --install  apt-get install postgresql when no initdb/pg_ctl is found (CI on Debian).
#   --fast     fsync=off, synchronous_commit=off: for tests only, never for benchmarks.
# As root the server runs as the `postgres` OS user (initdb refuses root); otherwise as the caller.
set -euo pipefail

install=false
fast=false
while [[ $# -gt 0 ]]; do
  case "$1" in
    --install) install=true; shift ;;
    --fast) fast=true; shift ;;
    --) shift; break ;;
    *) break ;;
  esac
done
if [[ $# -eq 0 ]]; then
  echo "usage: scripts/with-postgres.sh [--install] [--fast] -- COMMAND [ARGS...]" >&2
  exit 2
fi

# Debian's packages keep the binaries under /usr/lib/postgresql/<major>/bin; prefer the newest.
find_bin_dir() {
  local dir
  for dir in $(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -t/ -k4 -n -r); do
    if [[ -x "$dir/initdb" && -x "$dir/pg_ctl" ]]; then echo "$dir"; return 0; fi
  done
  if command -v initdb >/dev/null 2>&1 && command -v pg_ctl >/dev/null 2>&1; then
    dirname "$(readlink -f "$(command -v initdb)")"
    return 0
  fi
  return 1
}

if ! bin_dir="$(find_bin_dir)"; then
  if [[ "$install" != true ]]; then
    echo "with-postgres: no initdb/pg_ctl found (install PostgreSQL or pass --install)" >&2
    exit 3
  fi
  # The package would otherwise create and start a `main` cluster on port 5432 that nobody uses.
  if [[ ! -e /etc/postgresql-common/createcluster.conf ]]; then
    mkdir -p /etc/postgresql-common
    echo "create_main_cluster = false" > /etc/postgresql-common/createcluster.conf
  fi
  export DEBIAN_FRONTEND=noninteractive
  apt-get update
  apt-get install -y --no-install-recommends postgresql
  bin_dir="$(find_bin_dir)"
fi

# Runs a command as the cluster's OS user.
as_owner() {
  if [[ "$(id -u)" -eq 0 ]]; then
    runuser -u postgres -- "$@"
  else
    "$@"
  fi
}

if [[ "$(id -u)" -eq 0 ]] && ! id postgres >/dev/null 2>&1; then
  useradd --system --home-dir /nonexistent --shell /usr/sbin/nologin postgres
fi

work="$(mktemp -d "${TMPDIR:-/tmp}/acs-postgres.XXXXXX")"
[[ "$(id -u)" -eq 0 ]] && chown postgres: "$work"
chmod 700 "$work"

cleanup() {
  as_owner "$bin_dir/pg_ctl" -D "$work/data" -m fast -w stop >/dev/null 2>&1 || true
  rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

as_owner "$bin_dir/initdb" -D "$work/data" -U postgres --auth=trust --encoding=UTF8 --locale=C.UTF-8 >"$work/initdb.log" 2>&1 || {
  cat "$work/initdb.log" >&2
  exit 1
}

options="-c listen_addresses=127.0.0.1 -c unix_socket_directories=$work -c max_connections=200"
[[ "$fast" == true ]] && options="$options -c fsync=off -c synchronous_commit=off -c full_page_writes=off"

# A port that nothing answers on now; if another process takes it before the server binds,
# pg_ctl fails and the next candidate is tried.
port_in_use() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }
started=false
for _ in 1 2 3 4 5 6 7 8 9 10; do
  port=$((20000 + RANDOM % 40000))
  port_in_use "$port" && continue
  if as_owner "$bin_dir/pg_ctl" -D "$work/data" -l "$work/server.log" -w -t 60 -o "$options -p $port" start >/dev/null; then
    started=true
    break
  fi
done
if [[ "$started" != true ]]; then
  echo "with-postgres: could not start PostgreSQL; server log:" >&2
  cat "$work/server.log" >&2 || true
  exit 1
fi

export ACS_POSTGRES_URL="postgres://postgres@127.0.0.1:$port/postgres"
export ACS_POSTGRES_BIN_DIR="$bin_dir"
echo "with-postgres: PostgreSQL $("$bin_dir/postgres" --version | awk '{print $3}') on 127.0.0.1:$port (data in $work)" >&2

# Not exec: the EXIT trap must still stop the cluster.
set +e
"$@"
status=$?
set -e
exit "$status"

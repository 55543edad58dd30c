#!/usr/bin/env bash
# A throwaway PostgreSQL cluster for PostgresStore's tests, on a loopback port.
#
#   Scripts/postgres-cluster.sh start   # installs the server if missing, starts, prints the URL
#   Scripts/postgres-cluster.sh url     # prints the URL of the running cluster
#   Scripts/postgres-cluster.sh restart # crashes it (pg_ctl restart -m immediate) and waits until it is back
#   Scripts/postgres-cluster.sh stop    # stops it and removes its directory
#
# TOLLGATE_PG_PORT picks the port (default 54329). The cluster lives in a temporary directory
# named in a state file beside it, so `start` twice reuses the running cluster and `stop` twice
# does nothing the second time. Only the checkout that started a cluster stops it: another
# checkout on the same machine (a second worktree, its CI run) that finds it running uses it and
# leaves it running. Run as root (CI), the server runs as the `postgres` user, because
# PostgreSQL refuses to run as root; run as anyone else, it runs as that user.
set -euo pipefail

port="${TOLLGATE_PG_PORT:-54329}"
state_file="${TMPDIR:-/tmp}/tollgate-postgres-${port}.dir"
checkout="$(cd "$(dirname "$0")/.." && pwd -P)"
database="tollgate"
url="postgresql://postgres@127.0.0.1:${port}/${database}"

die() { echo "postgres-cluster: $*" >&2; exit 1; }

bindir() {
  local dir
  dir="$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1 || true)"
  if [ -z "$dir" ] && command -v pg_config >/dev/null 2>&1; then dir="$(pg_config --bindir)"; fi
  if [ -n "$dir" ] && [ -x "$dir/initdb" ]; then echo "$dir"; fi
}

install_server() {
  [ -n "$(bindir)" ] && return 0
  [ "$(id -u)" -eq 0 ] || die "PostgreSQL's server (initdb, pg_ctl) is not installed; as root run: apt-get install -y postgresql"
  echo "postgres-cluster: installing Debian's PostgreSQL server" >&2
  export DEBIAN_FRONTEND=noninteractive
  apt-get update >&2
  # The package's own cluster is not used: only its binaries and the postgres user are.
  apt-get install -y --no-install-recommends postgresql >&2
  [ -n "$(bindir)" ] || die "apt-get installed postgresql but no initdb was found under /usr/lib/postgresql"
}

# Runs a command with no file descriptor of ours beyond standard input, output and error. The
# postmaster pg_ctl starts lives on: whatever it inherits stays open as long as it runs. A caller
# that watches a descriptor for our exit (Foundation's Process does, on Linux) would otherwise
# wait for the server to stop. 255 is bash's own handle on this script.
without_inherited_fds() {
  (
    for fd in /proc/self/fd/*; do
      fd="${fd##*/}"
      case "$fd" in 0|1|2|255) ;; *) eval "exec ${fd}>&-" 2>/dev/null || true ;; esac
    done
    "$@"
  )
}

# Runs a server binary as the cluster's owner: `postgres` when we are root, else ourselves.
as_owner() {
  if [ "$(id -u)" -eq 0 ]; then
    id postgres >/dev/null 2>&1 || useradd --system --home-dir /var/lib/postgresql --shell /bin/sh postgres
    runuser -u postgres -- "$@"
  else
    "$@"
  fi
}

running_dir() {
  [ -f "$state_file" ] || return 1
  local dir bin
  dir="$(sed -n 1p "$state_file")"
  bin="$(bindir)"
  [ -n "$dir" ] && [ -d "$dir/data" ] && [ -n "$bin" ] || return 1
  as_owner "$bin/pg_ctl" -D "$dir/data" status >/dev/null 2>&1 || return 1
  echo "$dir"
}

start() {
  if running_dir >/dev/null; then echo "$url"; return 0; fi
  # A cluster that died left its state file and directory: clear them before starting anew.
  stop >/dev/null 2>&1 || true
  install_server
  local bin dir
  bin="$(bindir)"
  dir="$(mktemp -d "${TMPDIR:-/tmp}/tollgate-postgres.XXXXXX")"
  printf '%s\n%s\n' "$dir" "$checkout" > "$state_file"
  if [ "$(id -u)" -eq 0 ]; then chown postgres: "$dir"; fi
  chmod 700 "$dir"
  as_owner "$bin/initdb" -D "$dir/data" -U postgres --auth=trust --encoding=UTF8 --locale=C.UTF-8 \
    >"$dir/initdb.log" 2>&1 || { cat "$dir/initdb.log" >&2; die "initdb failed"; }
  # Loopback only, trust auth (initdb's pg_hba trusts local and 127.0.0.1), the socket in the
  # cluster's own directory so no system directory must be writable. fsync is off because the
  # cluster is thrown away: a killed server still loses nothing it committed (the WAL is in the
  # page cache), only a machine crash would.
  without_inherited_fds as_owner "$bin/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w -t 60 \
    -o "-c listen_addresses=127.0.0.1 -c port=${port} -k ${dir} -c fsync=off -c max_connections=200" start >&2 \
    || { cat "$dir/server.log" >&2; die "the server did not start on 127.0.0.1:${port} (is the port taken?)"; }
  local exists
  exists="$("$bin/psql" -h 127.0.0.1 -p "$port" -U postgres -d postgres -Atqc \
    "SELECT 1 FROM pg_database WHERE datname = '${database}'")"
  if [ "$exists" != "1" ]; then
    "$bin/psql" -h 127.0.0.1 -p "$port" -U postgres -d postgres -qc "CREATE DATABASE ${database}" >&2
  fi
  echo "$url"
}

stop() {
  [ -f "$state_file" ] || return 0
  local dir bin owner
  dir="$(sed -n 1p "$state_file")"
  owner="$(sed -n 2p "$state_file")"
  if [ -n "$owner" ] && [ "$owner" != "$checkout" ] && running_dir >/dev/null; then
    echo "postgres-cluster: left running: the cluster on port ${port} was started by ${owner}" >&2
    return 0
  fi
  bin="$(bindir)"
  if [ -n "$dir" ] && [ -d "$dir/data" ] && [ -n "$bin" ]; then
    as_owner "$bin/pg_ctl" -D "$dir/data" -m fast -w stop >/dev/null 2>&1 || true
  fi
  # Only a directory this script made: never whatever a stale state file might name.
  case "$dir" in
    "${TMPDIR:-/tmp}"/tollgate-postgres.*) rm -rf -- "$dir" ;;
  esac
  rm -f -- "$state_file"
}

# A crash as the server sees one: every backend is killed without a checkpoint, and the server
# starts again with crash recovery from its write-ahead log. `-l` again, because pg_ctl restart
# does not remember it, and the new postmaster would otherwise inherit (and hold open) our
# caller's standard output and error.
restart() {
  local dir bin owner
  dir="$(running_dir)" || die "no cluster is running on port ${port}; run: $0 start"
  owner="$(sed -n 2p "$state_file")"
  [ -z "$owner" ] || [ "$owner" = "$checkout" ] || die "the cluster on port ${port} was started by ${owner}: not crashing it"
  bin="$(bindir)"
  without_inherited_fds as_owner "$bin/pg_ctl" -D "$dir/data" -l "$dir/server.log" -m immediate -w -t 60 restart >/dev/null 2>&1 \
    || { tail -n 20 "$dir/server.log" >&2; die "the server did not come back on 127.0.0.1:${port}"; }
}

case "${1:-}" in
  start) start ;;
  restart) restart ;;
  stop) stop ;;
  url) running_dir >/dev/null || die "no cluster is running on port ${port}; run: $0 start"; echo "$url" ;;
  *) echo "usage: $0 start|restart|stop|url   (port: TOLLGATE_PG_PORT, default 54329)" >&2; exit 2 ;;
esac

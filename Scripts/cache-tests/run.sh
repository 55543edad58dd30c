#!/usr/bin/env bash
# Runs the public HTTP caching conformance suite, http-tests/cache-tests, through `tollgate proxy`
# as a shared cache (the suite's reverse-proxy tests; the browser-only ones are skipped by it).
#
#   bash Scripts/cache-tests/run.sh SUITE_DIR [TOLLGATE_BINARY]
#
# SUITE_DIR is a checkout of https://github.com/http-tests/cache-tests with `npm install` run in
# it (its client needs the packages its package.json names). TOLLGATE_BINARY defaults to
# .build/debug/tollgate. It starts the suite's origin server and the proxy on free loopback ports,
# with a fresh database and api.yaml beside this script (every path one endpoint, a quota that
# cannot run out, no throttle or circuit that bites, no retries: the suite reports a retried request
# as a failure), runs every test, prints the summary and leaves the results and logs in a temporary
# directory it names. It stops what it started.
set -u
here="$(cd "$(dirname "$0")" && pwd)"
suite="${1:?usage: run.sh SUITE_DIR [TOLLGATE_BINARY]}"
suite="$(cd "$suite" && pwd)"
binary="${2:-$here/../../.build/debug/tollgate}"
[ -f "$suite/test-engine/cli.mjs" ] || { echo "run.sh: $suite is not a checkout of http-tests/cache-tests" >&2; exit 2; }
[ -x "$binary" ] || { echo "run.sh: $binary is not an executable (swift build --product tollgate)" >&2; exit 2; }
work="$(mktemp -d "${TMPDIR:-/tmp}/tollgate-cache-tests.XXXXXX")"
origin_pid=""; proxy_pid=""
stop() {
    for pid in $proxy_pid $origin_pid; do kill "$pid" 2>/dev/null; done
    for pid in $proxy_pid $origin_pid; do wait "$pid" 2>/dev/null; done
}
trap stop EXIT
trap 'exit 130' INT TERM
free_port() { python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }

origin_port="$(free_port)"
( cd "$suite" && exec env npm_config_protocol=http npm_config_port="$origin_port" \
    npm_config_pidfile="$work/origin.pid" node test-engine/server/server.mjs ) > "$work/origin.log" 2>&1 &
origin_pid=$!
for _ in $(seq 50); do grep -q Listening "$work/origin.log" 2>/dev/null && break; sleep 0.1; done
grep -q Listening "$work/origin.log" || { echo "run.sh: the suite's origin did not start:" >&2; cat "$work/origin.log" >&2; exit 1; }

"$binary" proxy --listen 127.0.0.1:0 --upstream "http://127.0.0.1:$origin_port" --db "$work/ledger.sqlite" \
    --api "$here/api.yaml" > "$work/proxy.log" 2>&1 &
proxy_pid=$!
for _ in $(seq 100); do grep -q 'listening on' "$work/proxy.log" 2>/dev/null && break; sleep 0.1; done
base="$(grep -o 'listening on http://[0-9.:]*' "$work/proxy.log" | head -1 | sed 's/listening on //')"
[ -n "$base" ] || { echo "run.sh: the proxy did not start:" >&2; cat "$work/proxy.log" >&2; exit 1; }

( cd "$suite" && env npm_config_base="$base" npm_config_id= node --no-warnings test-engine/cli.mjs ) \
    > "$work/results.json" 2> "$work/client.log" \
    || { echo "run.sh: the suite's client failed; see $work/client.log" >&2; exit 1; }
node "$here/summarize.mjs" "$suite" "$work/results.json" --ids
echo "results and logs: $work"

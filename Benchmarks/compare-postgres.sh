#!/usr/bin/env bash
# Tollgate's admission over PostgreSQL beside the same server's floor, in one run: 1, 8 and 32
# concurrent clients on one hot bucket, and a check that concurrent admissions never spend a
# unit over the limit. The goal of issue 15: at 32 clients, at least half the floor's throughput.
#
#   bash Benchmarks/compare-postgres.sh
#
# Tollgate: `tollgate-bench pg-admission` — one process (one machine of a fleet) with a
#   PostgresStore whose pool has one connection per client, CLIENTS tasks each calling
#   `PostgresStore.admit` (circuit, throttle and a 1-unit quota charge in one transaction) in a loop.
# Floor: pgbench, one connection per client, each running a bare
#   `UPDATE … SET used = used + 1 WHERE id = 1 RETURNING used` on one row, autocommit, with
#   `-M prepared` (parsed once per connection: the cheapest a client can ask it, so the strictest
#   floor; postgres-nio sends each statement with the extended protocol, parse included).
# A second reference, `tollgate-bench pg-floor`: the same bare UPDATE through postgres-nio's
#   PostgresClient (the library PostgresStore uses), timed like Tollgate: what the Swift client
#   alone costs. The goal is against pgbench's floor.
# Every run starts from a vacuumed database. All three are timed the same way: a warm-up (the smaller of 1 s and a quarter of the run) is left
# out, then every call started in the timed phase counts; p50 and p99 are of those calls' latencies
# (pgbench's from its per-transaction log, `-l`).
#
# TOLLGATE_BENCH_SCALE (default 1) multiplies the seconds per run (6 s) and the overspend check's
#   limit; 0.2 gives a quick look.
# TOLLGATE_BENCH_ROUNDS (default 3) is how many times floor and Tollgate alternate at each client
#   count; the table shows the median of the rounds.
# TOLLGATE_PG_PORT (default 54339) is the port of the throwaway cluster it starts with
#   Scripts/postgres-cluster.sh (and stops at the end, unless it was already running); the run
#   uses a database of its own, `tollgate_bench`, dropped and created anew.
# TOLLGATE_BENCH_PG_URL, when set, names an existing database to use instead (no cluster is
#   started; a table `tollgate_bench_floor` is created in it; the server's settings decide).
set -euo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
cd "$here"
scale="${TOLLGATE_BENCH_SCALE:-1}"
rounds="${TOLLGATE_BENCH_ROUNDS:-3}"
export TOLLGATE_PG_PORT="${TOLLGATE_PG_PORT:-54339}"
clients_list=(1 8 32)
seconds="$(python3 -c "import sys; print(max(round(6 * float(sys.argv[1])), 1))" "$scale")"
warmup="$(python3 -c "import sys; print(min(1.0, int(sys.argv[1]) / 4))" "$seconds")"
overspend_limit="$(python3 -c "import sys; print(max(int(5000 * float(sys.argv[1])), 200))" "$scale")"

work="$(mktemp -d "${TMPDIR:-/tmp}/tollgate-compare-postgres.XXXXXX")"
results="$work/results.txt"
: > "$results"
log() { printf '\033[2m%s\033[0m\n' "$*" >&2; }

cluster="../Scripts/postgres-cluster.sh"
started_cluster=0
cleanup() {
    rm -rf "$work"
    if [ "$started_cluster" = 1 ]; then "$cluster" stop || true; fi
}
trap cleanup EXIT

# --- The server ----------------------------------------------------------------------------
bindir="$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1 || true)"
if [ -n "${TOLLGATE_BENCH_PG_URL:-}" ]; then
    url="$TOLLGATE_BENCH_PG_URL"
    [ -n "$bindir" ] || bindir="$(dirname "$(command -v pgbench)")"
else
    if ! "$cluster" url >/dev/null 2>&1; then started_cluster=1; fi
    log "starting the throwaway cluster on 127.0.0.1:$TOLLGATE_PG_PORT"
    server_url="$("$cluster" start)"
    bindir="$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1)"
    "$bindir/psql" "$server_url" -qc "DROP DATABASE IF EXISTS tollgate_bench" -c "CREATE DATABASE tollgate_bench" >/dev/null
    url="${server_url%/*}/tollgate_bench"
fi
psql=("$bindir/psql" "$url" -X -q -v ON_ERROR_STOP=1)
[ -x "$bindir/pgbench" ] || { echo "compare-postgres.sh: pgbench not found in $bindir" >&2; exit 1; }
"${psql[@]}" -c "DROP TABLE IF EXISTS tollgate_bench_floor" \
    -c "CREATE TABLE tollgate_bench_floor (id integer PRIMARY KEY, used bigint NOT NULL)" \
    -c "INSERT INTO tollgate_bench_floor VALUES (1, 0)"
printf '%s\n' "UPDATE tollgate_bench_floor SET used = used + 1 WHERE id = 1 RETURNING used;" > "$work/floor.sql"

# --- Build ----------------------------------------------------------------------------------
log "building the harness (release)"
. ./build-harness.sh

# floor CLIENTS ROUND: pgbench, then the same RESULT lines the harness prints, from its log.
floor() {
    local clients="$1" round="$2" threads=$(( $1 < 2 ? $1 : 2 )) prefix="$work/floor-c$1-r$2" output
    output="$("$bindir/pgbench" -n -M prepared -f "$work/floor.sql" -c "$clients" -j "$threads" \
        -T "$(python3 -c "import math, sys; print(math.ceil(float(sys.argv[1]) + float(sys.argv[2])))" "$seconds" "$warmup")" \
        -l --log-prefix="$prefix" "$url" 2>&1)" || { printf '%s\n' "$output" >&2; echo "compare-postgres.sh: pgbench failed" >&2; exit 1; }
    python3 - "$clients" "$warmup" "$prefix" <<'PY' >> "$results"
import glob, math, sys
clients, warmup, prefix = int(sys.argv[1]), float(sys.argv[2]), sys.argv[3]
calls = []  # (start, end) in microseconds since the epoch
for path in glob.glob(prefix + ".*"):
    for line in open(path):
        # client_id transaction_no time script_no time_epoch time_us (time: the latency, in µs)
        fields = line.split()
        end = int(fields[4]) * 1_000_000 + int(fields[5])
        calls.append((end - int(fields[2]), end))
begin = min(start for start, _ in calls)
timed_from = begin + warmup * 1e6
timed = [(start, end) for start, end in calls if start >= timed_from]
latencies = sorted(end - start for start, end in timed)
elapsed = max(end for _, end in timed) - timed_from
def percentile(fraction):
    rank = math.ceil(fraction * len(latencies)) - 1
    return latencies[min(max(rank, 0), len(latencies) - 1)] * 1000
print(f"RESULT pg.floor.c{clients}.ops_per_s {int(len(timed) / (elapsed / 1e6))}")
print(f"RESULT pg.floor.c{clients}.p50 {percentile(0.50)}")
print(f"RESULT pg.floor.c{clients}.p99 {percentile(0.99)}")
PY
    rm -f "$prefix".*
    printf '%s\n' "$output" | grep -E '^(number of failed|tps)' | sed "s/^/INFO floor c$clients: /" >&2 || true
}

vacuum() { "${psql[@]}" -c "VACUUM"; }

run() { # run COMMAND...: appends the harness's RESULT lines, shows its INFO lines
    local output
    output="$("$@")" || { echo "compare-postgres.sh: failed: $*" >&2; exit 1; }
    printf '%s\n' "$output" | grep '^RESULT' >> "$results" || true
    printf '%s\n' "$output" | grep '^INFO' >&2 || true
}

# --- Measure: floor and Tollgate alternate at each client count ------------------------------
for round in $(seq 1 "$rounds"); do
    for clients in "${clients_list[@]}"; do
        log "round $round of $rounds, $clients clients: floor (pgbench), the same UPDATE through postgres-nio, Tollgate admissions; ${seconds} s each"
        # Each run starts from a vacuumed database: the throttle's rows, one per admission and
        # deleted two milliseconds later, would otherwise leave the next run a different table.
        vacuum; floor "$clients" "$round"
        vacuum; run "$bin" pg-floor "$clients" "$seconds" "$url"
        vacuum; run "$bin" pg-admission "$clients" "$seconds" "$url"
    done
done
log "overspend: 32 clients admit 1-unit charges until a bucket of $overspend_limit units refuses them all"
vacuum; run "$bin" pg-overspend 32 "$overspend_limit" "$url"

# --- Report ---------------------------------------------------------------------------------
server="$("${psql[@]}" -At -c "SELECT split_part(version(), ' on ', 1) || '; fsync=' || current_setting('fsync') || ', synchronous_commit=' || current_setting('synchronous_commit') || ', shared_buffers=' || current_setting('shared_buffers')")"
python3 - "$results" "$server" "$seconds" "$rounds" <<'PY'
import os, platform, statistics, sys

values = {}
for line in open(sys.argv[1]):
    _, name, value = line.split()
    values.setdefault(name, []).append(float(value))
v = {name: statistics.median(samples) for name, samples in values.items()}
server, seconds, rounds = sys.argv[2], sys.argv[3], sys.argv[4]

def ms(ns): return f"{ns / 1e6:.2f} ms"
def rate(x): return f"{x:,.0f}/s"
headers = ("Clients", "Tollgate p50", "p99", "Throughput", "Floor p50", "p99", "Throughput", "Ratio")
rows = []
for clients in (1, 8, 32):
    t, f = f"pg.tollgate.c{clients}", f"pg.floor.c{clients}"
    ratio = v[f"{t}.ops_per_s"] / v[f"{f}.ops_per_s"]
    rows.append((str(clients), ms(v[f"{t}.p50"]), ms(v[f"{t}.p99"]), rate(v[f"{t}.ops_per_s"]),
                 ms(v[f"{f}.p50"]), ms(v[f"{f}.p99"]), rate(v[f"{f}.ops_per_s"]), f"{ratio:.2f}×"))
widths = [max(len(str(x[i])) for x in rows + [headers]) for i in range(len(headers))]
line = lambda cells: "| " + " | ".join(str(c).ljust(w) for c, w in zip(cells, widths)) + " |"
print(line(headers))
print("|" + "|".join("-" * (w + 2) for w in widths) + "|")
for r in rows: print(line(r))

print("\nThe same bare UPDATE through postgres-nio's PostgresClient (the store's driver), timed like Tollgate:\n")
headers = ("Clients", "postgres-nio p50", "p99", "Throughput", "vs pgbench", "Tollgate vs it")
rows = []
for clients in (1, 8, 32):
    n = f"pg.nio_floor.c{clients}"
    rows.append((str(clients), ms(v[f"{n}.p50"]), ms(v[f"{n}.p99"]), rate(v[f"{n}.ops_per_s"]),
                 f"{v[f'{n}.ops_per_s'] / v[f'pg.floor.c{clients}.ops_per_s']:.2f}×",
                 f"{v[f'pg.tollgate.c{clients}.ops_per_s'] / v[f'{n}.ops_per_s']:.2f}×"))
widths = [max(len(str(x[i])) for x in rows + [headers]) for i in range(len(headers))]
print(line(headers))
print("|" + "|".join("-" * (w + 2) for w in widths) + "|")
for r in rows: print(line(r))

ratio = v["pg.tollgate.c32.ops_per_s"] / v["pg.floor.c32.ops_per_s"]
print(f"\n≥ 0.5× floor throughput at 32 clients: {'met' if ratio >= 0.5 else 'NOT MET'} ({ratio:.2f}×)")
limit, used, admitted = int(v["pg.overspend.limit"]), int(v["pg.overspend.used"]), int(v["pg.overspend.admitted"])
over, mismatches = int(v["pg.overspend.over_limit"]), int(v["pg.overspend.ledger_mismatches"])
sound = over == 0 and mismatches == 0 and used == admitted and used <= limit
print(f"Zero overspend ({int(v['pg.overspend.clients'])} clients until refused, limit {limit:,}): "
      f"{'met' if sound else 'NOT MET'} — used {used:,} of {limit:,}, {admitted:,} admitted, {over} over the limit, "
      f"{mismatches} ledger mismatches (status vs usage vs events)")
cpu = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")), platform.processor())
print(f"\nMachine: {os.cpu_count()} cores, {cpu}; Linux {platform.release()}; {server}; server, pgbench and the "
      f"harness on the same machine, over 127.0.0.1. Median of {rounds} round{'s' if rounds != '1' else ''} of {seconds} s each.")
PY

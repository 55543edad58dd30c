#!/usr/bin/env bash
# Runs every Tollgate benchmark side by side with its reference in one run — the bare SQLite C
# API (floor/floor.c) and requests-cache (peer/requests_cache_bench.py) — and prints the ratios
# against the goals of issue 14.
#
#   bash Benchmarks/compare.sh                    # the table
#   bash Benchmarks/compare.sh --check            # and exit 1 when a ratio is over 15 % worse than baseline.json's
#   bash Benchmarks/compare.sh --write-baseline   # and store this run's ratios as the new baseline.json
#
# --check compares ratios (Tollgate over its reference in the same run), never absolute times, so a
# baseline taken on one machine still guards a run on another of the same kind.
#
# TOLLGATE_BENCH_SCALE (default 1) multiplies every iteration count; 0.2 gives a quick look.
# TOLLGATE_BENCH_ROUNDS (default 3) is how many times each pair alternates; the table shows the
# median of the rounds' medians. TOLLGATE_BENCH_MAX_ENTRIES (default 1000000) caps the scale test.
# TOLLGATE_BENCH_BIN times a harness built before instead of building one (to alternate two builds).
set -euo pipefail

check=""
write_baseline=""
for argument in "$@"; do
    case "$argument" in
        --check) check=1 ;;
        --write-baseline) write_baseline=1 ;;
        -h|--help) sed -n '2,20p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
        *) echo "compare.sh: unknown argument '$argument' (--check, --write-baseline)" >&2; exit 64 ;;
    esac
done

here="$(cd "$(dirname "$0")" && pwd)"
cd "$here"
scale="${TOLLGATE_BENCH_SCALE:-1}"
rounds="${TOLLGATE_BENCH_ROUNDS:-3}"
max_entries="${TOLLGATE_BENCH_MAX_ENTRIES:-1000000}"
iterations() { python3 -c "import sys; print(max(int(float(sys.argv[1]) * float(sys.argv[2])), 20))" "$1" "$scale"; }

work="$(mktemp -d "${TMPDIR:-/tmp}/tollgate-compare.XXXXXX")"
trap 'rm -rf "$work"' EXIT
results="$work/results.txt"
: > "$results"
log() { printf '\033[2m%s\033[0m\n' "$*" >&2; }

# --- Build ----------------------------------------------------------------------------------
if ! pkg-config --exists sqlite3 2>/dev/null && [ ! -e /usr/include/sqlite3.h ]; then
    log "installing libsqlite3-dev"
    apt-get install -y libsqlite3-dev >/dev/null
fi
log "building the C floor"
cc -O2 -Wall -Wextra -o "$work/floor" floor/floor.c -lsqlite3
# The design floors again, their log written as Tollgate writes its own (one write per transaction).
cc -O2 -Wall -Wextra -DFLOOR_BATCHED_WAL -I ../Sources/CSQLiteBatchedWAL/include -o "$work/floor-batched-wal" \
    floor/floor.c ../Sources/CSQLiteBatchedWAL/BatchedWAL.c -lsqlite3 -lpthread
log "building the harness (release)"
. ./build-harness.sh
log "preparing the requests-cache virtual environment"
python3 peer/requests_cache_bench.py 20 "$work" > /dev/null

run() { # run NAME COMMAND...: appends RESULT lines, tagged with the round
    local output
    output="$("$@")" || { echo "compare.sh: failed: $*" >&2; exit 1; }
    printf '%s\n' "$output" | grep '^RESULT' >> "$results" || true
    printf '%s\n' "$output" | grep '^INFO' >&2 || true
}
fresh() { rm -f "$work/$1" "$work/$1-wal" "$work/$1-shm"; echo "$work/$1"; }

# --- Measure: each pair alternates, so both see the same machine ------------------------------
for round in $(seq 1 "$rounds"); do
    log "round $round of $rounds: admission vs bare transaction"
    run "$work/floor" txn "$(iterations 5000)" "$work"
    run "$bin" admission "$(iterations 5000)" "$(fresh admission.sqlite)"
    # The admission's own SQL through the C API, on the file the harness just left.
    run "$work/floor" statements "$(iterations 5000)" "$work/admission.sqlite"
    # The least an admission can write under DESIGN.md's ledger and throttle rules.
    run "$work/floor" design-admission "$(iterations 5000)" "$work"
    run "$work/floor-batched-wal" design-admission "$(iterations 5000)" "$work"

    log "round $round: cache hit vs blob read vs requests-cache read; store vs transaction vs requests-cache store"
    run "$work/floor" blob "$(iterations 10000)" "$work"
    run "$bin" hit "$(iterations 10000)" "$(fresh hit.sqlite)"
    run "$work/floor" upsert "$(iterations 3000)" "$work"
    run "$bin" store "$(iterations 3000)" "$(fresh store.sqlite)"
    # The store's own SQL through the C API, on the file the harness just left (1,000 entries).
    run "$work/floor" store-statements "$(iterations 3000)" "$work/store.sqlite"
    # The least a store at capacity can write under DESIGN.md's cache rules.
    run "$work/floor" design-store "$(iterations 3000)" "$work"
    run "$work/floor-batched-wal" design-store "$(iterations 3000)" "$work"
    run python3 peer/requests_cache_bench.py "$(iterations 2000)" "$work"
done

# The sizes alternate, rounds times, each a process of its own: whole runs of the hit harness land
# near one speed or another on this kind of machine, and one run per size made the ratio a coin toss.
sizes=()
for entries in 1000 100000 1000000; do
    [ "$entries" -le "$max_entries" ] || continue
    log "scale: filling $entries entries"
    run "$bin" fill "$entries" "$(fresh "scale-$entries.sqlite")"
    sizes+=("$entries")
done
for round in $(seq 1 "$rounds"); do
    log "scale, round $round of $rounds: ${sizes[*]} entries"
    for entries in "${sizes[@]}"; do
        run "$bin" scale "$entries" "$(iterations 2000)" "$work/scale-$entries.sqlite"
    done
done
for entries in "${sizes[@]}"; do rm -f "$work/scale-$entries.sqlite"*; done

# Rounds here too: one run of each made the ratio swing by half between runs of one build.
for round in $(seq 1 "$rounds"); do
    log "contention, round $round of $rounds: 4 processes vs 1, Tollgate admissions and bare transactions"
    run "$work/floor" contention 4 "$(iterations 4000)" "$work"
    run "$bin" contention 4 "$(iterations 2000)" "$(fresh contention.sqlite)"
done

log "end to end: a 304 through the gate vs the bare transport, over loopback"
for round in $(seq 1 "$rounds"); do
    run "$bin" e2e "$(iterations 1000)" "$(fresh e2e.sqlite)"
done

log "batching: 1,000 single-ID lookups over 200 IDs, with and without the YouTube preset's batching"
run "$bin" batching 1000 200 "$(fresh batching.sqlite)"

# --- Report ---------------------------------------------------------------------------------
python3 report.py "$results" "$max_entries" ${check:+--check baseline.json} ${write_baseline:+--write-baseline baseline.json}

#!/usr/bin/env bash
# Runs every Tollgate benchmark side by side with its reference in one run — the bare SQLite C
# API (floor/floor.c) and requests-cache (peer/requests_cache_bench.py) — and prints the ratios
# against the goals of issue 14.
#
#   bash Benchmarks/compare.sh
#
# TOLLGATE_BENCH_SCALE (default 1) multiplies every iteration count; 0.2 gives a quick look.
# TOLLGATE_BENCH_ROUNDS (default 3) is how many times each pair alternates; the table shows the
# median of the rounds' medians. TOLLGATE_BENCH_MAX_ENTRIES (default 1000000) caps the scale test.
# TOLLGATE_BENCH_BIN times a harness built before instead of building one (to alternate two builds).
set -euo pipefail

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

    log "round $round: cache hit vs blob read vs requests-cache read; store vs transaction vs requests-cache store"
    run "$work/floor" blob "$(iterations 10000)" "$work"
    run "$bin" hit "$(iterations 10000)" "$(fresh hit.sqlite)"
    run "$work/floor" upsert "$(iterations 3000)" "$work"
    run "$bin" store "$(iterations 3000)" "$(fresh store.sqlite)"
    # The store's own SQL through the C API, on the file the harness just left (1,000 entries).
    run "$work/floor" store-statements "$(iterations 3000)" "$work/store.sqlite"
    # The least a store at capacity can write under DESIGN.md's cache rules.
    run "$work/floor" design-store "$(iterations 3000)" "$work"
    run python3 peer/requests_cache_bench.py "$(iterations 2000)" "$work"
done

for entries in 1000 100000 1000000; do
    [ "$entries" -le "$max_entries" ] || continue
    log "scale: $entries entries"
    file="$(fresh "scale-$entries.sqlite")"
    run "$bin" fill "$entries" "$file"
    run "$bin" scale "$entries" "$(iterations 2000)" "$file"
    rm -f "$file" "$file-wal" "$file-shm"
done

log "contention: 4 processes vs 1, Tollgate admissions and bare transactions"
run "$work/floor" contention 4 "$(iterations 4000)" "$work"
run "$bin" contention 4 "$(iterations 2000)" "$(fresh contention.sqlite)"

log "end to end: a 304 through the gate vs the bare transport, over loopback"
for round in $(seq 1 "$rounds"); do
    run "$bin" e2e "$(iterations 1000)" "$(fresh e2e.sqlite)"
done

log "batching: 1,000 single-ID lookups over 200 IDs, with and without the YouTube preset's batching"
run "$bin" batching 1000 200 "$(fresh batching.sqlite)"

# --- Report ---------------------------------------------------------------------------------
python3 - "$results" "$max_entries" <<'PY'
import os, platform, statistics, subprocess, sys

values = {}
for line in open(sys.argv[1]):
    _, name, value = line.split()
    values.setdefault(name, []).append(float(value))
v = {name: statistics.median(samples) for name, samples in values.items()}
max_entries = int(sys.argv[2])

def us(ns): return f"{ns / 1000:.1f} µs"
rows = []
def row(benchmark, tollgate, reference, ratio, goal, met):
    rows.append((benchmark, tollgate, reference, ratio, goal, "met" if met else "NOT MET"))

r = v["tollgate.admission"] / v["floor.txn"]
row("Admission (circuit+throttle+quota, 1 tx)", us(v["tollgate.admission"]), "bare tx " + us(v["floor.txn"]), f"{r:.2f}×", "≤ 2× floor", r <= 2)
callers = (("main_actor", "main actor"), ("nonisolated", "nonisolated"))
for caller, label in callers:
    hit = v[f"tollgate.hit.{caller}"]
    r = hit / v["floor.blob"]
    row(f"Cache hit, 10 KiB ({label} caller)", us(hit), "blob read " + us(v["floor.blob"]), f"{r:.2f}×", "≤ 2× floor", r <= 2)
    r = v["peer.read"] / hit
    row(f"Cache hit vs requests-cache read ({label})", us(hit), "requests-cache " + us(v["peer.read"]), f"{r:.1f}× faster", "≥ 5× faster", r >= 5)
for caller, label in callers:
    hit = v[f"tollgate.gate_hit.{caller}"]
    r = hit / v["floor.blob"]
    row(f"Fresh hit through Gate.send ({label})", us(hit), "blob read " + us(v["floor.blob"]), f"{r:.2f}×", "≤ 3× floor", r <= 3)
r = v["tollgate.store"] / v["floor.upsert"]
row("Cache store, 10 KiB, at capacity", us(v["tollgate.store"]), "blob upsert " + us(v["floor.upsert"]), f"{r:.2f}×", "≤ 2× floor", r <= 2)
r = v["peer.store"] / v["tollgate.store"]
row("Cache store vs requests-cache store", us(v["tollgate.store"]), "requests-cache " + us(v["peer.store"]), f"{r:.1f}× faster", "≥ 3× faster", r >= 3)
top = max((n for n in (1000, 100000, 1000000) if n <= max_entries), default=1000)
for op in ("hit", "store"):
    small, large = v.get(f"scale.1000.{op}"), v.get(f"scale.{top}.{op}")
    if small and large:
        r = large / small
        row(f"Scale {op}: {top:,} vs 1,000 entries", us(large), us(small), f"{r:.2f}×", "≤ 1.3×", r <= 1.3)
rss = v.get(f"scale.{top}.peak_rss_bytes")
if rss:
    row(f"Peak resident memory, {top:,} entries", f"{rss / 2**20:.1f} MiB", "", "", "< 64 MiB", rss < 64 * 2**20)
r = v["contention.aggregate_ops_per_s"] / v["contention.single_ops_per_s"]
f = v["floor.contention.aggregate_ops_per_s"] / v["floor.contention.single_ops_per_s"]
row("Contention: 4 processes vs 1", f"{v['contention.aggregate_ops_per_s']:,.0f}/s vs {v['contention.single_ops_per_s']:,.0f}/s",
    f"bare tx: {f:.2f}×", f"{r:.2f}×", "≥ 0.8×", r >= 0.8)
busy = int(v["contention.busy"] + v.get("contention.failures", 0))
row("SQLITE_BUSY reaching a caller", str(int(v["contention.busy"])), f"bare tx: {int(v['floor.contention.busy'])}", "", "0", busy == 0)
r = v["e2e.gate"] / v["e2e.bare"] - 1
row("End to end: 304 via gate vs bare transport", us(v["e2e.gate"]), "bare " + us(v["e2e.bare"]), f"{r * 100:+.0f} %", "≤ +10 %", r <= 0.10)

context = []
def beside_floor(key, description, reference, reference_label, tollgate, tollgate_label, relation):
    """A context line: a floor beside its row's reference, and Tollgate's row beside the floor."""
    if key not in v:
        return
    floor = v[key]
    context.append(f"{description}: {us(floor)}, {floor / v[reference]:.2f}× the {reference_label}; "
                   f"Tollgate's {tollgate_label} is {v[tollgate] / floor:.2f}× {relation}.")

beside_floor("floor.admission_statements",
             "The admission's own statements through the C API, on Tollgate's schema (floor statements)",
             "floor.txn", "bare tx", "tollgate.admission", "admission", "its own SQL")
beside_floor("floor.design_admission",
             "The least an admission can write under DESIGN.md (floor design-admission: a charge event appended, the day's "
             "total and the throttle's counter updated, three trivial statements, no reads)",
             "floor.txn", "bare tx", "tollgate.admission", "admission", "it")
beside_floor("floor.design_store",
             "The least a store at capacity can write under DESIGN.md (floor design-store: metadata and body in two tables, "
             "the LRU entry taken over with a new key and body, its key and LRU indexes moved; nothing else)",
             "floor.upsert", "blob upsert", "tollgate.store", "store", "it")
beside_floor("floor.store_statements",
             "A store's own statements through the C API, on Tollgate's schema (floor store-statements)",
             "floor.upsert", "blob upsert", "tollgate.store", "store", "its own SQL")

if "e2e.floor_path" in v:
    floor_path = v["e2e.floor_path"]
    context.append(f"End to end, the SQLite floor in situ (one 10 KiB body read and one one-row write transaction through the C API, "
                   f"then the same bare request): {us(floor_path)}, {(floor_path / v['e2e.bare'] - 1) * 100:+.1f} % over the bare "
                   f"transport; the gate's own work over that floor: {us(v['e2e.gate'] - floor_path)}.")

if "e2e.gate_back_to_back" in v:
    sequential = v["e2e.gate_back_to_back"]
    context.append(f"End to end, back to back (each 304 through the gate sent as soon as the previous answer came, so it also "
                   f"meets the rest of that answer's write): {us(sequential)}, {(sequential / v['e2e.bare'] - 1) * 100:+.0f} % "
                   f"over the bare transport. Not a goal row: the row above times the gate up to its answer.")

if "batching.with.units" in v:
    context.append(f"Batching (1,000 single-ID videos.list lookups over 200 IDs, 50 at a time; not a timing row): "
                   f"without batching {v['batching.without.upstream_calls']:.0f} upstream calls and {v['batching.without.units']:.0f} units, "
                   f"with batching {v['batching.with.upstream_calls']:.0f} calls and {v['batching.with.units']:.0f} units.")

headers = ("Benchmark", "Tollgate", "Reference", "Ratio", "Goal", "")
widths = [max(len(str(x[i])) for x in rows + [headers]) for i in range(6)]
line = lambda cells: "| " + " | ".join(str(c).ljust(w) for c, w in zip(cells, widths)) + " |"
print(line(headers))
print("|" + "|".join("-" * (w + 2) for w in widths) + "|")
for r in rows: print(line(r))
for note in context: print("\n" + note)
cpu = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")), platform.processor())
sqlite = subprocess.run(["python3", "-c", "import sqlite3; print(sqlite3.sqlite_version)"], capture_output=True, text=True).stdout.strip()
print(f"\nMachine: {os.cpu_count()} cores, {cpu}; Linux {platform.release()}; SQLite {sqlite}. Medians; WAL, synchronous=NORMAL, files under {os.environ.get('TMPDIR', '/tmp')}.")
PY

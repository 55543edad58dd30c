# Sourced by compare.sh and compare-postgres.sh, in Benchmarks/: builds `tollgate-bench` in
# release mode and sets `bin` to it, or stops the run. Needs `work` (a scratch directory).
#
# SwiftPM's incremental release build of the path dependency (the Tollgate package) is not to be
# trusted here: it kept its plan when files were added (and failed to find them), and it once linked
# modules compiled against an older layout of a changed type (heap corruption at run time). So the
# plan is made anew and Tollgate's own modules and the harness are recompiled each time (about a
# minute; the other packages stay built). A failed build stops the run: an old harness is never timed.
# TOLLGATE_BENCH_BIN names a harness built before (another checkout's, say): it is timed as it is,
# so two builds can be alternated on one machine (see README, "Before and after").
if [ -n "${TOLLGATE_BENCH_BIN:-}" ]; then
    [ -x "$TOLLGATE_BENCH_BIN" ] || { echo "$(basename "$0"): TOLLGATE_BENCH_BIN is not an executable" >&2; exit 1; }
    bin="$TOLLGATE_BENCH_BIN"
    return 0
fi
rm -rf .build/release.yaml .build/*/release/description.json .build/*/release/Tollgate*.build \
    .build/*/release/BenchmarkScenarios.build .build/*/release/tollgate_bench.build \
    .build/*/release/Modules/Tollgate* .build/*/release/Modules/BenchmarkScenarios*
if ! swift build -c release --product tollgate-bench > "$work/build.log" 2>&1; then
    grep -E "error" "$work/build.log" >&2 || tail -n 20 "$work/build.log" >&2
    echo "$(basename "$0"): the harness did not build" >&2
    exit 1
fi
grep -E "warning: .*Benchmarks/Sources" "$work/build.log" >&2 || true
bin="$(swift build -c release --show-bin-path)/tollgate-bench"
[ -x "$bin" ] || { echo "$(basename "$0"): the harness did not build" >&2; exit 1; }

#!/usr/bin/env bash
# How long `tollgate simulate` takes to replay a HAR file, and how that grows with its size:
# HAR files of 10,000 and 100,000 entries (a day of 200 videos refreshed with YouTube's max-age=0
# and entity tags), each replayed under the YouTube preset, timed with the same binary in one run.
#
#   bash Benchmarks/simulate.sh                          # 10,000 and 100,000 entries, release build
#   TOLLGATE_SIMULATE_SIZES="1000 10000" bash Benchmarks/simulate.sh
#   TOLLGATE_BIN=.build/debug/tollgate bash Benchmarks/simulate.sh   # an existing binary
set -euo pipefail
cd "$(dirname "$0")/.."
sizes=${TOLLGATE_SIMULATE_SIZES:-"10000 100000"}
if [ -z "${TOLLGATE_BIN:-}" ]; then
  swift build -c release --product tollgate >/dev/null
  TOLLGATE_BIN=.build/release/tollgate
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
printf '%-10s %10s %14s %12s\n' entries seconds "µs/entry" "vs first"
first=""
for size in $sizes; do
  python3 - "$size" "$work/$size.har" <<'PY'
import json, sys, datetime
count, path = int(sys.argv[1]), sys.argv[2]
start = datetime.datetime(2026, 11, 20, 8, 0, tzinfo=datetime.timezone.utc)
spacing = 86_000 / count
entries = []
for i in range(count):
    video = i % 200
    entries.append({
        "startedDateTime": (start + datetime.timedelta(seconds=i * spacing)).isoformat(),
        "time": 40,
        "request": {"method": "GET", "url": f"https://www.googleapis.com/youtube/v3/videos?id=v{video}&part=snippet",
                    "httpVersion": "HTTP/1.1", "headers": [], "queryString": [], "cookies": [], "headersSize": -1, "bodySize": 0},
        "response": {"status": 200, "statusText": "OK", "httpVersion": "HTTP/1.1",
                     "headers": [{"name": "Content-Type", "value": "application/json"},
                                 {"name": "ETag", "value": f'"{video}-{i // 5000}"'},
                                 {"name": "Cache-Control", "value": "private, max-age=0, must-revalidate"}],
                     "cookies": [], "content": {"size": 40, "mimeType": "application/json",
                                                "text": json.dumps({"items": [{"id": f"v{video}"}]})},
                     "redirectURL": "", "headersSize": -1, "bodySize": 40},
        "cache": {}, "timings": {"send": 0, "wait": 40, "receive": 0}})
json.dump({"log": {"version": "1.2", "creator": {"name": "simulate.sh", "version": "1"}, "entries": entries}}, open(path, "w"))
PY
  started=$(date +%s.%N)
  "$TOLLGATE_BIN" simulate --api youtube-v3 --har "$work/$size.har" --json >/dev/null
  ended=$(date +%s.%N)
  seconds=$(python3 -c "print(f'{$ended - $started:.2f}')")
  per=$(python3 -c "print(f'{($ended - $started) / $size * 1e6:.0f}')")
  if [ -z "$first" ]; then first=$per; ratio="1.00x"; else ratio=$(python3 -c "print(f'{$per / $first:.2f}x')"); fi
  printf '%-10s %10s %14s %12s\n' "$size" "$seconds" "$per" "$ratio"
done

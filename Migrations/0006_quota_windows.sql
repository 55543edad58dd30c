-- Tollgate schema, version 6: windows beyond the Pacific day, limits the server announces, costs
-- settled from the answer.
--
-- A bucket now counts over its own window: the Pacific day (as before, and the default), a day or
-- a month in another time zone, a clock hour or minute, or the last N seconds. quota_usage and
-- quota_events keep their columns: pacific_date now holds the key of the window a row belongs to,
-- its start: the Pacific date for the default window (so every existing row keeps its meaning and
-- quota_today reads as before), the local date for other calendar windows, the UTC instant
-- ('2026-11-27T10:00:00Z') for the others.

-- The bucket's window, as text ('day America/Los_Angeles', 'hour', 'minute', 'month Europe/Paris',
-- 'rolling 3600'), and the window the ledger last charged in, so the quota_windows view shows it:
-- its key, the oldest key it counts (a rolling window counts several), and when it ends.
ALTER TABLE quota_buckets ADD COLUMN window_spec TEXT NOT NULL DEFAULT 'day America/Los_Angeles';
ALTER TABLE quota_buckets ADD COLUMN window_key TEXT;
ALTER TABLE quota_buckets ADD COLUMN window_first_key TEXT;
ALTER TABLE quota_buckets ADD COLUMN window_end_ms INTEGER;
-- The last reset the server announced, and the key of the window it was announced in: it moves
-- that window's end (a server such as GitHub starts its hour at the first request, not at :00).
ALTER TABLE quota_buckets ADD COLUMN announced_key TEXT;
ALTER TABLE quota_buckets ADD COLUMN announced_reset_ms INTEGER;
-- When a paced bucket last charged, and in which window: the next paced charge waits its slot.
ALTER TABLE quota_buckets ADD COLUMN paced_at_ms INTEGER;
ALTER TABLE quota_buckets ADD COLUMN paced_key TEXT;
-- Every existing bucket counts the Pacific day: its window is today's.
UPDATE quota_buckets SET
    window_key = (SELECT pacific_date FROM pacific_clock),
    window_first_key = (SELECT pacific_date FROM pacific_clock),
    window_end_ms = (SELECT CAST(round((julianday(resets_at) - 2440587.5) * 86400000) AS INTEGER) FROM pacific_clock);

-- Two more event kinds: 'announced' (the server said fewer units are left than the ledger counted:
-- the difference, on the endpoint '*') and 'settle' (a charge's actual cost read from its answer:
-- the difference from the estimate). A CHECK cannot be altered in SQLite: the table is rebuilt,
-- every row and id kept. The new table references itself under its final name, which the rename
-- keeps; no other table or view refers to quota_events.
CREATE TABLE quota_events_rebuilt (
    id              INTEGER PRIMARY KEY,
    at_ms           INTEGER NOT NULL,
    pacific_date    TEXT NOT NULL,
    bucket          TEXT NOT NULL,
    endpoint        TEXT NOT NULL,
    kind            TEXT NOT NULL CHECK (kind IN ('charge', 'refund', 'reset', 'exhausted', 'limit', 'announced', 'settle')),
    units           INTEGER NOT NULL,
    -- For a refund or a settlement: the charge it belongs to.
    reservation_id  INTEGER REFERENCES quota_events_rebuilt (id),
    detail          TEXT
) STRICT;
INSERT INTO quota_events_rebuilt (id, at_ms, pacific_date, bucket, endpoint, kind, units, reservation_id, detail)
SELECT id, at_ms, pacific_date, bucket, endpoint, kind, units, reservation_id, detail FROM quota_events ORDER BY id;
DROP TABLE quota_events;
ALTER TABLE quota_events_rebuilt RENAME TO quota_events;
CREATE UNIQUE INDEX quota_events_one_refund ON quota_events (reservation_id) WHERE kind = 'refund';
CREATE INDEX quota_events_by_reservation ON quota_events (reservation_id) WHERE reservation_id IS NOT NULL;
-- At most one settlement per charge and bucket, even when two processes settle the same answer.
CREATE UNIQUE INDEX quota_events_one_settlement ON quota_events (reservation_id, bucket) WHERE kind = 'settle';

-- quota_today keeps its columns and shows the buckets counted by the Pacific day, as it always
-- did; quota_windows shows every bucket in its own window.
DROP VIEW quota_today;
CREATE VIEW quota_today AS
WITH clock AS (
    SELECT pacific_date, now_ms, resets_at FROM pacific_clock
), bucket_totals AS (
    SELECT usage.bucket, SUM(usage.units) AS units
    FROM quota_usage AS usage JOIN clock ON usage.pacific_date = clock.pacific_date
    GROUP BY usage.bucket
)
SELECT clock.pacific_date,
       bucket.bucket,
       usage.endpoint,
       COALESCE(usage.units, 0) AS units,
       COALESCE(usage.calls, 0) AS calls,
       bucket.daily_limit AS bucket_limit,
       CASE WHEN bucket.exhausted_until_ms > clock.now_ms THEN 0
            ELSE MAX(bucket.daily_limit - COALESCE(totals.units, 0), 0) END AS bucket_remaining,
       COALESCE(totals.units, 0) AS bucket_units,
       COALESCE(bucket.exhausted_until_ms > clock.now_ms, 0) AS bucket_exhausted,
       clock.resets_at AS resets_at_utc
FROM quota_buckets AS bucket
CROSS JOIN clock
LEFT JOIN quota_usage AS usage ON usage.bucket = bucket.bucket AND usage.pacific_date = clock.pacific_date
LEFT JOIN bucket_totals AS totals ON totals.bucket = bucket.bucket
WHERE bucket.window_spec = 'day America/Los_Angeles'
ORDER BY bucket.bucket, usage.endpoint;

-- Every bucket in the window it last charged in. A window that has ended shows no usage
-- (is_current 0): the next charge opens the next one.
CREATE VIEW quota_windows AS
WITH clock AS (SELECT now_ms FROM pacific_clock), windows AS (
    SELECT bucket.bucket, bucket.window_spec, bucket.daily_limit, bucket.exhausted_until_ms,
           bucket.window_key, bucket.window_first_key, bucket.window_end_ms,
           COALESCE(bucket.window_end_ms > clock.now_ms, 0) AS is_current, clock.now_ms
    FROM quota_buckets AS bucket CROSS JOIN clock
), totals AS (
    SELECT windows.bucket, SUM(usage.units) AS units, SUM(usage.calls) AS calls
    FROM windows JOIN quota_usage AS usage
      ON usage.bucket = windows.bucket AND usage.pacific_date BETWEEN windows.window_first_key AND windows.window_key
    WHERE windows.is_current
    GROUP BY windows.bucket
)
SELECT windows.bucket,
       windows.window_spec AS window,
       windows.window_key AS window_start,
       strftime('%Y-%m-%dT%H:%M:%SZ', windows.window_end_ms / 1000, 'unixepoch') AS resets_at_utc,
       windows.is_current,
       COALESCE(totals.units, 0) AS units,
       COALESCE(totals.calls, 0) AS calls,
       windows.daily_limit AS bucket_limit,
       CASE WHEN windows.exhausted_until_ms > windows.now_ms THEN 0
            ELSE MAX(windows.daily_limit - COALESCE(totals.units, 0), 0) END AS remaining,
       COALESCE(windows.exhausted_until_ms > windows.now_ms, 0) AS exhausted
FROM windows LEFT JOIN totals ON totals.bucket = windows.bucket
ORDER BY windows.bucket;

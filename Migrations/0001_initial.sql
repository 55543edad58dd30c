-- Tollgate schema, version 1.
-- Times are INTEGER milliseconds since the Unix epoch (UTC), in columns named *_ms; the views
-- format them as UTC text. Pacific dates are 'YYYY-MM-DD' text in America/Los_Angeles.
-- Views are a public contract for sqlite3 users: columns may be added, never renamed or removed.

-- The quota ledger ---------------------------------------------------------------------------

CREATE TABLE quota_buckets (
    bucket              TEXT PRIMARY KEY NOT NULL,
    daily_limit         INTEGER NOT NULL CHECK (daily_limit >= 0),
    -- 'configuration': the limit follows the library's configuration (updated when it changes);
    -- 'admin': set by an operator, kept until the operator clears it.
    limit_source        TEXT NOT NULL DEFAULT 'configuration' CHECK (limit_source IN ('configuration', 'admin')),
    -- Set when the server itself said the daily quota is spent: the next Pacific midnight after
    -- the mark. No reservation in the bucket until then.
    exhausted_until_ms  INTEGER,
    -- The highest usage warning (percent of the limit) already logged, and for which Pacific day,
    -- so each warning is logged once a day by one process, even across restarts.
    warned_date         TEXT,
    warned_percent      INTEGER NOT NULL DEFAULT 0,
    updated_at_ms       INTEGER NOT NULL
) STRICT;

-- Per Pacific day, bucket and endpoint: always the sum of quota_events for the same keys.
CREATE TABLE quota_usage (
    pacific_date  TEXT NOT NULL,
    bucket        TEXT NOT NULL REFERENCES quota_buckets (bucket),
    endpoint      TEXT NOT NULL,
    units         INTEGER NOT NULL DEFAULT 0,
    calls         INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (pacific_date, bucket, endpoint)
) STRICT, WITHOUT ROWID;

-- Append-only. A refund or a reset is a negative event, never an UPDATE or a DELETE here.
-- A charge's id is its reservation id. Events that change no usage ('exhausted', 'limit', a
-- reset of an empty day) have units 0; those about a whole bucket use the endpoint '*'.
CREATE TABLE quota_events (
    id              INTEGER PRIMARY KEY,
    at_ms           INTEGER NOT NULL,
    pacific_date    TEXT NOT NULL,
    bucket          TEXT NOT NULL,
    endpoint        TEXT NOT NULL,
    kind            TEXT NOT NULL CHECK (kind IN ('charge', 'refund', 'reset', 'exhausted', 'limit')),
    units           INTEGER NOT NULL,
    -- For a refund: the charge it gives back.
    reservation_id  INTEGER REFERENCES quota_events (id),
    detail          TEXT
) STRICT;
CREATE INDEX quota_events_by_day ON quota_events (pacific_date, bucket, endpoint);
-- At most one refund per charge, even when two processes settle the same reservation.
CREATE UNIQUE INDEX quota_events_one_refund ON quota_events (reservation_id) WHERE kind = 'refund';

-- The throttle -------------------------------------------------------------------------------

-- The limits in force, written by the throttle from its configuration so the view can show them.
CREATE TABLE throttle_limits (
    endpoint       TEXT PRIMARY KEY NOT NULL,
    request_limit  INTEGER NOT NULL CHECK (request_limit >= 0),
    window_ms      INTEGER NOT NULL CHECK (window_ms > 0),
    updated_at_ms  INTEGER NOT NULL
) STRICT;

-- One row per admitted request; rows older than the window are pruned.
CREATE TABLE throttle_requests (
    id        INTEGER PRIMARY KEY,
    endpoint  TEXT NOT NULL,
    at_ms     INTEGER NOT NULL
) STRICT;
CREATE INDEX throttle_requests_window ON throttle_requests (endpoint, at_ms);

-- The circuit breaker ------------------------------------------------------------------------

CREATE TABLE circuits (
    endpoint                 TEXT PRIMARY KEY NOT NULL,
    state                    TEXT NOT NULL DEFAULT 'closed' CHECK (state IN ('closed', 'open', 'half_open')),
    consecutive_failures     INTEGER NOT NULL DEFAULT 0,
    -- How many of those failures in a row were rate limits (429, 403 rateLimitExceeded).
    consecutive_rate_limits  INTEGER NOT NULL DEFAULT 0,
    failure_threshold        INTEGER NOT NULL DEFAULT 5,
    opened_at_ms             INTEGER,
    open_until_ms            INTEGER,
    open_duration_ms         INTEGER,
    -- Half-open admits one probe at a time across processes: whoever holds an unexpired lease.
    probe_owner              TEXT,
    probe_lease_until_ms     INTEGER,
    failed_probes            INTEGER NOT NULL DEFAULT 0,
    trips                    INTEGER NOT NULL DEFAULT 0,
    updated_at_ms            INTEGER NOT NULL
) STRICT;

-- Append-only: every state change with its reason.
CREATE TABLE circuit_transitions (
    id          INTEGER PRIMARY KEY,
    endpoint    TEXT NOT NULL,
    at_ms       INTEGER NOT NULL,
    from_state  TEXT NOT NULL,
    to_state    TEXT NOT NULL,
    reason      TEXT NOT NULL
) STRICT;
CREATE INDEX circuit_transitions_by_endpoint ON circuit_transitions (endpoint, id);

-- The ETag cache -----------------------------------------------------------------------------

-- Metadata only: the body lives in cache_bodies, so a 304 merge or an LRU touch never rewrites it.
CREATE TABLE cache_entries (
    id                INTEGER PRIMARY KEY,
    -- Digest of method + normalised URL + credential partition.
    resource_key      TEXT NOT NULL,
    -- Digest of the request's values for the headers that the response's Vary names ('' if none).
    variant_key       TEXT NOT NULL DEFAULT '',
    endpoint          TEXT NOT NULL,
    method            TEXT NOT NULL,
    -- Normalised URL with every secret replaced by a marker: never an API key in plaintext.
    url               TEXT NOT NULL,
    vary              TEXT,
    status            INTEGER NOT NULL,
    -- Response header fields, one 'name: value' per line, secrets and Set-Cookie removed.
    headers           TEXT NOT NULL,
    etag              TEXT,
    last_modified     TEXT,
    body_size         INTEGER NOT NULL CHECK (body_size >= 0),
    stored_at_ms      INTEGER NOT NULL,
    validated_at_ms   INTEGER NOT NULL,
    -- From max-age or Expires; NULL when the entry must be revalidated before every use.
    fresh_until_ms    INTEGER,
    last_access_ms    INTEGER NOT NULL,
    hit_count         INTEGER NOT NULL DEFAULT 0,
    UNIQUE (resource_key, variant_key)
) STRICT;
CREATE INDEX cache_entries_lru ON cache_entries (last_access_ms);
CREATE INDEX cache_entries_age ON cache_entries (validated_at_ms);
-- An unsafe method (POST, PUT, PATCH, DELETE) invalidates every entry stored for its URL.
CREATE INDEX cache_entries_by_url ON cache_entries (url);

CREATE TABLE cache_bodies (
    entry_id  INTEGER PRIMARY KEY REFERENCES cache_entries (id) ON DELETE CASCADE,
    body      BLOB NOT NULL
) STRICT;

-- One row, kept by triggers, so capacity checks never count the table.
CREATE TABLE cache_totals (
    id          INTEGER PRIMARY KEY CHECK (id = 1),
    entries     INTEGER NOT NULL,
    body_bytes  INTEGER NOT NULL
) STRICT;
INSERT INTO cache_totals (id, entries, body_bytes) VALUES (1, 0, 0);

CREATE TRIGGER cache_entries_counted_on_insert AFTER INSERT ON cache_entries BEGIN
    UPDATE cache_totals SET entries = entries + 1, body_bytes = body_bytes + NEW.body_size WHERE id = 1;
END;
CREATE TRIGGER cache_entries_counted_on_delete AFTER DELETE ON cache_entries BEGIN
    UPDATE cache_totals SET entries = entries - 1, body_bytes = body_bytes - OLD.body_size WHERE id = 1;
END;
CREATE TRIGGER cache_entries_counted_on_resize AFTER UPDATE OF body_size ON cache_entries BEGIN
    UPDATE cache_totals SET body_bytes = body_bytes - OLD.body_size + NEW.body_size WHERE id = 1;
END;

CREATE TABLE cache_stats_daily (
    pacific_date   TEXT NOT NULL,
    endpoint       TEXT NOT NULL,
    hits           INTEGER NOT NULL DEFAULT 0,
    revalidations  INTEGER NOT NULL DEFAULT 0,
    misses         INTEGER NOT NULL DEFAULT 0,
    stale          INTEGER NOT NULL DEFAULT 0,
    bytes_saved    INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (pacific_date, endpoint)
) STRICT, WITHOUT ROWID;

-- Operations -----------------------------------------------------------------------------------

-- Append-only record of administrative changes that have no ledger or history of their own
-- (throttle resets, cache prunes and clears), so nothing is ever deleted silently.
CREATE TABLE admin_events (
    id       INTEGER PRIMARY KEY,
    at_ms    INTEGER NOT NULL,
    subject  TEXT NOT NULL,
    target   TEXT,
    action   TEXT NOT NULL,
    detail   TEXT
) STRICT;

-- Views: the public contract for sqlite3 users -------------------------------------------------

-- Now, in Pacific time. SQLite has no time-zone database, so the US rules in force since 2007
-- are written out: daylight time from the second Sunday of March at 10:00 UTC (02:00 PST) to the
-- first Sunday of November at 09:00 UTC (02:00 PDT).
CREATE VIEW pacific_clock AS
WITH now AS (
    SELECT julianday('now') AS jd, strftime('%Y', 'now') AS year
), bounds AS (
    SELECT jd,
           julianday(date(year || '-03-08', 'weekday 0'), '+10 hours') AS dst_start,
           julianday(date(year || '-11-01', 'weekday 0'), '+9 hours') AS dst_end
    FROM now
), offset AS (
    SELECT jd, CASE WHEN jd >= dst_start AND jd < dst_end THEN -7 ELSE -8 END AS hours, dst_start, dst_end
    FROM bounds
), today AS (
    SELECT jd, hours, dst_start, dst_end, date(jd, hours || ' hours') AS pacific_date FROM offset
), next_midnight AS (
    -- The next local midnight, first guessed in standard time, then moved if daylight time holds.
    SELECT *, julianday(date(pacific_date, '+1 day'), '+8 hours') AS guess FROM today
)
SELECT pacific_date,
       hours AS utc_offset_hours,
       CAST(round((jd - 2440587.5) * 86400000) AS INTEGER) AS now_ms,
       datetime(CASE WHEN guess - 1.0 / 24 >= dst_start AND guess - 1.0 / 24 < dst_end
                     THEN guess - 1.0 / 24 ELSE guess END) AS resets_at
FROM next_midnight;

CREATE VIEW quota_daily AS
SELECT pacific_date, bucket, endpoint, units, calls
FROM quota_usage
ORDER BY pacific_date DESC, bucket, endpoint;

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
ORDER BY bucket.bucket, usage.endpoint;

CREATE VIEW cache_stats AS
SELECT pacific_date, endpoint, hits, revalidations, misses, stale,
       ROUND(CAST(hits + revalidations AS REAL) / NULLIF(hits + revalidations + misses, 0), 4) AS hit_rate,
       bytes_saved
FROM cache_stats_daily
ORDER BY pacific_date DESC, endpoint;

CREATE VIEW circuit_status AS
WITH clock AS (SELECT now_ms FROM pacific_clock)
SELECT circuit.endpoint,
       CASE WHEN circuit.state = 'open' AND circuit.open_until_ms <= clock.now_ms THEN 'half_open'
            ELSE circuit.state END AS state,
       circuit.consecutive_failures,
       circuit.failure_threshold,
       datetime(circuit.open_until_ms / 1000.0, 'unixepoch') AS open_until,
       CASE WHEN circuit.state = 'open'
            -- A wall clock that jumped back never shows more than the open duration.
            THEN MIN(MAX((circuit.open_until_ms - clock.now_ms + 999) / 1000, 0),
                     (COALESCE(circuit.open_duration_ms, 0) + 999) / 1000)
            ELSE 0 END AS retry_in_seconds,
       circuit.trips,
       datetime(circuit.updated_at_ms / 1000.0, 'unixepoch') AS updated_at
FROM circuits AS circuit CROSS JOIN clock
ORDER BY circuit.endpoint;

CREATE VIEW throttle_status AS
WITH clock AS (SELECT now_ms FROM pacific_clock), counted AS (
    SELECT limits.endpoint, limits.window_ms, limits.request_limit,
           (SELECT COUNT(*) FROM throttle_requests AS request
             WHERE request.endpoint = limits.endpoint AND request.at_ms > clock.now_ms - limits.window_ms)
           AS current_count
    FROM throttle_limits AS limits CROSS JOIN clock
)
SELECT endpoint, window_ms / 1000.0 AS window_seconds, request_limit, current_count,
       MAX(request_limit - current_count, 0) AS remaining
FROM counted
ORDER BY endpoint;

-- Tollgate schema for PostgreSQL, version 1: the SQLite schema (Migrations/0001 to 0003) for a
-- fleet of machines sharing one database.
-- Tables, columns and views have the SQLite names, so the sqlite3 recipes read the same in psql.
-- Times are bigint milliseconds since the Unix epoch (UTC) in *_ms columns, as in SQLite; every
-- "now" comes from the database's clock (now()), never a client's, so machines whose clocks
-- disagree still agree on the Pacific day, the windows and the open-until times.
-- Views are a public contract for psql users: columns may be added, never renamed or removed.

-- Time -------------------------------------------------------------------------------------------

CREATE FUNCTION tollgate_ms(t timestamptz) RETURNS bigint
LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS $$ SELECT floor(extract(epoch FROM t) * 1000)::bigint $$;

-- The Pacific date of an instant, as 'YYYY-MM-DD' (the key of every per-day row).
CREATE FUNCTION tollgate_pacific_date(t timestamptz) RETURNS text
LANGUAGE sql STABLE PARALLEL SAFE
AS $$ SELECT to_char(t AT TIME ZONE 'America/Los_Angeles', 'YYYY-MM-DD') $$;

-- The next Pacific midnight after an instant (the day can be 23 or 25 hours long).
CREATE FUNCTION tollgate_next_reset_ms(t timestamptz) RETURNS bigint
LANGUAGE sql STABLE PARALLEL SAFE
AS $$ SELECT tollgate_ms((((t AT TIME ZONE 'America/Los_Angeles')::date + 1)::timestamp) AT TIME ZONE 'America/Los_Angeles') $$;

-- The quota ledger ---------------------------------------------------------------------------

CREATE TABLE quota_buckets (
    bucket              text PRIMARY KEY,
    daily_limit         bigint NOT NULL CHECK (daily_limit BETWEEN 0 AND 1000000000000),
    -- 'configuration': the limit follows the library's configuration (updated when it changes);
    -- 'admin': set by an operator, kept until the operator clears it.
    limit_source        text NOT NULL DEFAULT 'configuration' CHECK (limit_source IN ('configuration', 'admin')),
    -- The next Pacific midnight after the server said the daily quota is spent.
    exhausted_until_ms  bigint,
    updated_at_ms       bigint NOT NULL
);

-- Per Pacific day and bucket, all endpoints together: the row every charge of the bucket that day
-- updates, so the check and the charge are one conditional upsert on one row (its row lock orders
-- the charges of every machine). units is always the sum of the day's quota_usage rows for the
-- bucket. ceiling is the limit in force at the last charge (raised when a reconciliation takes
-- the count above it): the CHECK is the backstop that fails a charge statement that would ever
-- overspend, whatever a future change to it does. warned_percent is the highest usage warning
-- (percent of the limit) already reported that day, so each is reported once, by one machine
-- (SQLite keeps it in quota_buckets with its date).
CREATE TABLE quota_bucket_days (
    pacific_date    text NOT NULL,
    bucket          text NOT NULL REFERENCES quota_buckets (bucket),
    units           bigint NOT NULL DEFAULT 0,
    ceiling         bigint NOT NULL,
    warned_percent  integer NOT NULL DEFAULT 0,
    PRIMARY KEY (pacific_date, bucket),
    CHECK (units <= ceiling)
);

-- Per Pacific day, bucket and endpoint: always the sum of quota_events for the same keys.
CREATE TABLE quota_usage (
    pacific_date  text NOT NULL,
    bucket        text NOT NULL REFERENCES quota_buckets (bucket),
    endpoint      text NOT NULL,
    units         bigint NOT NULL DEFAULT 0,
    calls         bigint NOT NULL DEFAULT 0,
    PRIMARY KEY (pacific_date, bucket, endpoint)
);

-- Append-only. A refund or a reset is a negative event, never an UPDATE or a DELETE here.
-- A charge's id is its reservation id.
CREATE TABLE quota_events (
    id              bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    at_ms           bigint NOT NULL,
    pacific_date    text NOT NULL,
    bucket          text NOT NULL,
    endpoint        text NOT NULL,
    kind            text NOT NULL CHECK (kind IN ('charge', 'refund', 'reset', 'exhausted', 'limit')),
    units           bigint NOT NULL,
    reservation_id  bigint REFERENCES quota_events (id),
    detail          text
);
CREATE INDEX quota_events_by_day ON quota_events (pacific_date, bucket, endpoint);
CREATE INDEX quota_events_by_reservation ON quota_events (reservation_id) WHERE reservation_id IS NOT NULL;
-- At most one refund per charge, even when two machines settle the same reservation.
CREATE UNIQUE INDEX quota_events_one_refund ON quota_events (reservation_id) WHERE kind = 'refund';

-- The throttle -------------------------------------------------------------------------------

CREATE TABLE throttle_limits (
    endpoint       text PRIMARY KEY,
    request_limit  integer NOT NULL CHECK (request_limit >= 0),
    window_ms      bigint NOT NULL CHECK (window_ms > 0),
    updated_at_ms  bigint NOT NULL
);

CREATE TABLE throttle_requests (
    id        bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    endpoint  text NOT NULL,
    at_ms     bigint NOT NULL
);
CREATE INDEX throttle_requests_window ON throttle_requests (endpoint, at_ms);

-- The circuit breaker ------------------------------------------------------------------------

CREATE TABLE circuits (
    endpoint                 text PRIMARY KEY,
    state                    text NOT NULL DEFAULT 'closed' CHECK (state IN ('closed', 'open', 'half_open')),
    consecutive_failures     integer NOT NULL DEFAULT 0,
    consecutive_rate_limits  integer NOT NULL DEFAULT 0,
    failure_threshold        integer NOT NULL DEFAULT 5,
    opened_at_ms             bigint,
    open_until_ms            bigint,
    open_duration_ms         bigint,
    -- The half-open probe's lease: whoever holds an unexpired one (by the database's clock) probes.
    probe_owner              text,
    probe_lease_until_ms     bigint,
    failed_probes            integer NOT NULL DEFAULT 0,
    trips                    integer NOT NULL DEFAULT 0,
    -- Bumped by every state change, so a machine can tell that the circuit it cached is stale.
    generation               bigint NOT NULL DEFAULT 0,
    updated_at_ms            bigint NOT NULL
);

CREATE TABLE circuit_transitions (
    id          bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    endpoint    text NOT NULL,
    at_ms       bigint NOT NULL,
    from_state  text NOT NULL,
    to_state    text NOT NULL,
    reason      text NOT NULL
);
CREATE INDEX circuit_transitions_by_endpoint ON circuit_transitions (endpoint, id);

-- The ETag cache -----------------------------------------------------------------------------

CREATE TABLE cache_entries (
    id                bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    resource_key      text NOT NULL,
    variant_key       text NOT NULL DEFAULT '',
    endpoint          text NOT NULL,
    method            text NOT NULL,
    url               text NOT NULL,
    vary              text,
    status            integer NOT NULL,
    headers           text NOT NULL,
    etag              text,
    last_modified     text,
    body_size         bigint NOT NULL CHECK (body_size >= 0),
    stored_at_ms      bigint NOT NULL,
    validated_at_ms   bigint NOT NULL,
    fresh_until_ms    bigint,
    last_access_ms    bigint NOT NULL,
    hit_count         bigint NOT NULL DEFAULT 0,
    initial_age_ms    bigint NOT NULL DEFAULT 0 CHECK (initial_age_ms >= 0),
    UNIQUE (resource_key, variant_key)
);
CREATE INDEX cache_entries_lru ON cache_entries (last_access_ms);
CREATE INDEX cache_entries_age ON cache_entries (validated_at_ms);
CREATE INDEX cache_entries_by_url ON cache_entries (url);

CREATE TABLE cache_bodies (
    entry_id  bigint PRIMARY KEY REFERENCES cache_entries (id) ON DELETE CASCADE,
    body      bytea NOT NULL
);

CREATE TABLE cache_leases (
    resource_key text PRIMARY KEY,
    holder       text NOT NULL,
    started_ms   bigint NOT NULL,
    expires_ms   bigint NOT NULL CHECK (expires_ms >= started_ms)
);

CREATE TABLE cache_stats_daily (
    pacific_date   text NOT NULL,
    endpoint       text NOT NULL,
    hits           bigint NOT NULL DEFAULT 0,
    revalidations  bigint NOT NULL DEFAULT 0,
    misses         bigint NOT NULL DEFAULT 0,
    stale          bigint NOT NULL DEFAULT 0,
    bytes_saved    bigint NOT NULL DEFAULT 0,
    coalesced      bigint NOT NULL DEFAULT 0 CHECK (coalesced >= 0),
    PRIMARY KEY (pacific_date, endpoint)
);

-- Operations -----------------------------------------------------------------------------------

CREATE TABLE admin_events (
    id       bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    at_ms    bigint NOT NULL,
    subject  text NOT NULL,
    target   text,
    action   text NOT NULL,
    detail   text
);

-- Views: the public contract for psql users ----------------------------------------------------

-- Now, in Pacific time, by the database's clock (PostgreSQL has the time-zone database).
CREATE VIEW pacific_clock AS
SELECT tollgate_pacific_date(now()) AS pacific_date,
       (extract(epoch FROM (now() AT TIME ZONE 'America/Los_Angeles') - (now() AT TIME ZONE 'UTC')) / 3600)::integer
           AS utc_offset_hours,
       tollgate_ms(now()) AS now_ms,
       to_char(to_timestamp(tollgate_next_reset_ms(now()) / 1000.0) AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS')
           AS resets_at;

CREATE VIEW quota_daily AS
SELECT pacific_date, bucket, endpoint, units, calls
FROM quota_usage
ORDER BY pacific_date DESC, bucket, endpoint;

CREATE VIEW quota_today AS
WITH clock AS (
    SELECT pacific_date, now_ms, resets_at FROM pacific_clock
), bucket_totals AS (
    SELECT usage.bucket, SUM(usage.units)::bigint AS units
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
            ELSE GREATEST(bucket.daily_limit - COALESCE(totals.units, 0), 0) END AS bucket_remaining,
       COALESCE(totals.units, 0) AS bucket_units,
       CASE WHEN bucket.exhausted_until_ms > clock.now_ms THEN 1 ELSE 0 END AS bucket_exhausted,
       clock.resets_at AS resets_at_utc
FROM quota_buckets AS bucket
CROSS JOIN clock
LEFT JOIN quota_usage AS usage ON usage.bucket = bucket.bucket AND usage.pacific_date = clock.pacific_date
LEFT JOIN bucket_totals AS totals ON totals.bucket = bucket.bucket
ORDER BY bucket.bucket, usage.endpoint;

CREATE VIEW cache_stats AS
SELECT pacific_date, endpoint, hits, revalidations, misses, stale,
       ROUND((hits + revalidations + coalesced)::numeric
             / NULLIF(hits + revalidations + coalesced + misses, 0), 4) AS hit_rate,
       bytes_saved, coalesced
FROM cache_stats_daily
ORDER BY pacific_date DESC, endpoint;

CREATE VIEW circuit_status AS
WITH clock AS (SELECT now_ms FROM pacific_clock)
SELECT circuit.endpoint,
       CASE WHEN circuit.state = 'open' AND circuit.open_until_ms <= clock.now_ms THEN 'half_open'
            ELSE circuit.state END AS state,
       circuit.consecutive_failures,
       circuit.failure_threshold,
       to_char(to_timestamp(circuit.open_until_ms / 1000.0) AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS') AS open_until,
       CASE WHEN circuit.state = 'open'
            THEN LEAST(GREATEST((circuit.open_until_ms - clock.now_ms + 999) / 1000, 0),
                       (COALESCE(circuit.open_duration_ms, 0) + 999) / 1000)
            ELSE 0 END AS retry_in_seconds,
       circuit.trips,
       to_char(to_timestamp(circuit.updated_at_ms / 1000.0) AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS') AS updated_at
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
       GREATEST(request_limit - current_count, 0) AS remaining
FROM counted
ORDER BY endpoint;

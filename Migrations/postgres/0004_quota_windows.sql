-- Tollgate schema for PostgreSQL, version 4: windows beyond the Pacific day, limits the server
-- announces, costs settled from the answer (SQLite's version 6).
--
-- A bucket now counts over its own window: the Pacific day (as before, and the default), a day or
-- a month in another time zone, a clock hour or minute, or the last N seconds. quota_usage,
-- quota_bucket_days and quota_events keep their columns: pacific_date now holds the key of the
-- window a row belongs to, its start: the Pacific date for the default window (so every existing
-- row keeps its meaning and quota_today reads as before), the local date for other calendar
-- windows, the UTC instant ('2026-11-27T10:00:00Z') for the others. quota_bucket_days stays one
-- row per key and bucket; its ceiling is raised when a settlement or an announcement legitimately
-- takes the key's usage past the limit, so the CHECK still stops every charge that would.
--
-- The database's clock still decides "now". The Pacific day is still computed here in SQL, on the
-- one-statement admission; another window, an announced reset or pacing is computed by the client
-- from the database's now, under the bucket's row lock (PostgresStore+QuotaWindows.swift).

-- The bucket's window, as text ('day America/Los_Angeles', 'hour', 'minute', 'month Europe/Paris',
-- 'rolling 3600'), and the window the ledger last charged in, so the quota_windows view shows it:
-- its key, the oldest key it counts (a rolling window counts several), and when it ends.
ALTER TABLE quota_buckets
    ADD COLUMN window_spec text NOT NULL DEFAULT 'day America/Los_Angeles',
    ADD COLUMN window_key text,
    ADD COLUMN window_first_key text,
    ADD COLUMN window_end_ms bigint,
    -- The last reset the server announced, and the key of the window it was announced in: it moves
    -- that window's end (a server such as GitHub starts its hour at the first request, not at :00).
    ADD COLUMN announced_key text,
    ADD COLUMN announced_reset_ms bigint,
    -- When a paced bucket last charged, and in which window: the next paced charge waits its slot.
    ADD COLUMN paced_at_ms bigint,
    ADD COLUMN paced_key text;
-- Every existing bucket counts the Pacific day: its window is today's.
UPDATE quota_buckets SET
    window_key = tollgate_pacific_date(now()),
    window_first_key = tollgate_pacific_date(now()),
    window_end_ms = tollgate_next_reset_ms(now());

-- The first instant of the Pacific day of an instant (midnight always exists there: the clocks
-- change at 02:00).
CREATE FUNCTION tollgate_day_start_ms(t timestamptz) RETURNS bigint
LANGUAGE sql STABLE PARALLEL SAFE
AS $$ SELECT tollgate_ms((((t AT TIME ZONE 'America/Los_Angeles')::date)::timestamp) AT TIME ZONE 'America/Los_Angeles') $$;

-- Two more event kinds: 'announced' (the server said fewer units are left than the ledger counted:
-- the difference, on the endpoint '*') and 'settle' (a charge's actual cost read from its answer:
-- the difference from the estimate).
ALTER TABLE quota_events DROP CONSTRAINT quota_events_kind_check;
ALTER TABLE quota_events ADD CONSTRAINT quota_events_kind_check
    CHECK (kind IN ('charge', 'refund', 'reset', 'exhausted', 'limit', 'announced', 'settle'));
-- At most one settlement per charge and bucket, even when two machines settle the same answer.
CREATE UNIQUE INDEX quota_events_one_settlement ON quota_events (reservation_id, bucket) WHERE kind = 'settle';

-- quota_today keeps its columns and shows the buckets counted by the Pacific day, as it always
-- did; quota_windows shows every bucket in its own window.
CREATE OR REPLACE VIEW quota_today AS
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
WHERE bucket.window_spec = 'day America/Los_Angeles'
ORDER BY bucket.bucket, usage.endpoint;

-- Every bucket in its window, with SQLite's columns ("window" is a keyword here: psql users quote
-- it, as in SELECT bucket, "window" FROM quota_windows). A window that has ended shows no usage
-- (is_current 0): the next charge opens the next one. The one-statement admission charges a
-- Pacific-day bucket without writing its row, so such a bucket, unless a reset announced today
-- moved its window, shows today, as quota_today does. Keys compare as bytes ("C"), as in SQLite.
CREATE VIEW quota_windows AS
WITH clock AS (
    SELECT pacific_date, now_ms, tollgate_next_reset_ms(now()) AS reset_ms,
           tollgate_day_start_ms(now()) AS day_start_ms
    FROM pacific_clock
), windows AS (
    SELECT bucket.bucket, bucket.window_spec, bucket.daily_limit, bucket.exhausted_until_ms, clock.now_ms,
           CASE WHEN today THEN clock.pacific_date ELSE bucket.window_key END AS window_key,
           CASE WHEN today THEN clock.pacific_date ELSE bucket.window_first_key END AS window_first_key,
           CASE WHEN today THEN clock.reset_ms ELSE bucket.window_end_ms END AS window_end_ms
    FROM quota_buckets AS bucket
    CROSS JOIN clock
    CROSS JOIN LATERAL (
        SELECT bucket.window_spec = 'day America/Los_Angeles'
               AND COALESCE(bucket.announced_reset_ms <= clock.day_start_ms, true) AS today
    ) AS pacific
), current_windows AS (
    SELECT windows.*, CASE WHEN windows.window_end_ms > windows.now_ms THEN 1 ELSE 0 END AS is_current
    FROM windows
), totals AS (
    SELECT w.bucket, SUM(usage.units)::bigint AS units, SUM(usage.calls)::bigint AS calls
    FROM current_windows AS w JOIN quota_usage AS usage
      ON usage.bucket = w.bucket
     AND usage.pacific_date >= w.window_first_key COLLATE "C" AND usage.pacific_date <= w.window_key COLLATE "C"
    WHERE w.is_current = 1
    GROUP BY w.bucket
)
SELECT w.bucket,
       w.window_spec AS window,
       w.window_key AS window_start,
       to_char(to_timestamp(w.window_end_ms / 1000) AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"') AS resets_at_utc,
       w.is_current,
       COALESCE(totals.units, 0) AS units,
       COALESCE(totals.calls, 0) AS calls,
       w.daily_limit AS bucket_limit,
       CASE WHEN w.exhausted_until_ms > w.now_ms THEN 0
            ELSE GREATEST(w.daily_limit - COALESCE(totals.units, 0), 0) END AS remaining,
       CASE WHEN w.exhausted_until_ms > w.now_ms THEN 1 ELSE 0 END AS exhausted
FROM current_windows AS w LEFT JOIN totals ON totals.bucket = w.bucket
ORDER BY w.bucket;

-- The one-statement admission (version 3) decides the Pacific day in SQL: it now leaves to the full
-- transaction a bucket whose stored window is another (the transaction brings the row up to date
-- first) and one whose window a reset announced today moved. Otherwise unchanged: the Swift side
-- sends it only requests for a Pacific-day bucket without pacing.
CREATE OR REPLACE FUNCTION tollgate_admit_batch(
    p_endpoint text, p_request_limit bigint, p_window_ms bigint,
    p_bucket text, p_charged_endpoint text, p_costs bigint[], p_configured_limit bigint, p_warning_percents bigint[]
) RETURNS TABLE (
    outcome text, now_ms bigint, throttle_count bigint, reservation_id bigint, pacific_date text,
    used_after bigint, daily_limit bigint, warnings bigint[],
    endpoint text, state text, consecutive_failures integer, consecutive_rate_limits integer,
    failure_threshold integer, opened_at_ms bigint, open_until_ms bigint, open_duration_ms bigint,
    probe_owner text, probe_lease_until_ms bigint, failed_probes integer, trips integer, updated_at_ms bigint
)
LANGUAGE plpgsql VOLATILE
AS $function$
#variable_conflict use_column
DECLARE
    v_circuit circuits%ROWTYPE;
    v_found_circuit boolean;
    v_limits throttle_limits%ROWTYPE;
    v_bucket quota_buckets%ROWTYPE;
    v_now_ms bigint;
    v_count bigint;
    v_window bigint[];
    v_day text := tollgate_pacific_date(now());
    v_units bigint := 0;
    v_admitted integer := 0;     -- how many costs, from the first, are admitted
    v_total bigint := 0;         -- their sum
    v_used bigint;
    v_warned integer;
    v_warned_changed boolean := false;
    v_first_used bigint;         -- the day's units before the first admitted cost
    v_ids bigint[];
    v_crossed bigint[];
    -- The warning thresholds in order, and the first one no charge of this statement has reached.
    v_thresholds bigint[] := ARRAY(SELECT p FROM unnest(p_warning_percents) AS p WHERE p BETWEEN 1 AND 100 ORDER BY p);
    v_next_warning integer := 1;
    v_sequence regclass := 'quota_events_id_seq'::regclass;  -- the identity column's sequence
    i integer;
BEGIN
    -- Only a closed (or never used) circuit is decided here: it allows without writing.
    SELECT * INTO v_circuit FROM circuits AS c WHERE c.endpoint = p_endpoint;
    v_found_circuit := FOUND;
    IF NOT (v_found_circuit AND v_circuit.state <> 'closed') THEN
        -- The lock that orders this endpoint's admissions across machines; then a window read under it.
        SELECT * INTO v_limits FROM throttle_limits AS l WHERE l.endpoint = p_endpoint FOR UPDATE;
        IF FOUND AND v_limits.request_limit = p_request_limit AND v_limits.window_ms = p_window_ms THEN
            v_now_ms := tollgate_ms(clock_timestamp());
            -- tollgate_window, written out: a SQL function called from PL/pgSQL is planned on every call.
            v_window := ARRAY(SELECT t FROM unnest(v_limits.admitted_at_ms) AS t
                              WHERE t > v_now_ms - p_window_ms ORDER BY t);
            v_count := cardinality(v_window);
            SELECT * INTO v_bucket FROM quota_buckets AS b WHERE b.bucket = p_bucket;
            -- A Pacific-day bucket whose day no announced reset moved: the reset is read only when
            -- one was ever announced, the rare case.
            IF FOUND AND NOT (v_bucket.limit_source = 'configuration' AND v_bucket.daily_limit <> p_configured_limit)
               AND v_bucket.exhausted_until_ms IS DISTINCT FROM tollgate_next_reset_ms(now())
               AND v_bucket.window_spec = 'day America/Los_Angeles'
               AND (v_bucket.announced_reset_ms IS NULL
                    OR v_bucket.announced_reset_ms <= tollgate_day_start_ms(now())) THEN
                SELECT d.units INTO v_units FROM quota_bucket_days AS d
                WHERE d.pacific_date = v_day AND d.bucket = p_bucket FOR UPDATE;
                v_units := COALESCE(v_units, 0);
                -- Costs in order while each fits the window and the budget left by the ones before.
                WHILE v_admitted < cardinality(p_costs)
                      AND v_count + v_admitted < p_request_limit
                      AND p_costs[v_admitted + 1] BETWEEN 1 AND v_bucket.daily_limit
                      AND v_units + v_total + p_costs[v_admitted + 1] <= v_bucket.daily_limit LOOP
                    v_total := v_total + p_costs[v_admitted + 1];
                    v_admitted := v_admitted + 1;
                END LOOP;
            END IF;
        END IF;
    END IF;

    IF v_admitted > 0 THEN
        -- Check and charge in one conditional upsert of the bucket's day row, as the full path does:
        -- a day row another machine made since the read above still cannot pass the ceiling.
        INSERT INTO quota_bucket_days AS d (pacific_date, bucket, units, ceiling)
        VALUES (v_day, p_bucket, v_total, v_bucket.daily_limit)
        ON CONFLICT ON CONSTRAINT quota_bucket_days_pkey DO UPDATE
            SET units = d.units + excluded.units, ceiling = excluded.ceiling
            WHERE d.units + excluded.units <= excluded.ceiling
        RETURNING d.units, d.warned_percent INTO v_used, v_warned;
        IF NOT FOUND THEN
            v_admitted := 0;
        END IF;
    END IF;

    IF v_admitted > 0 THEN
        v_first_used := v_used - v_total;
        -- Each charge its own event; the ids are taken first so each cost knows its own.
        v_ids := ARRAY(SELECT nextval(v_sequence) FROM generate_series(1, v_admitted));
        INSERT INTO quota_events (id, at_ms, pacific_date, bucket, endpoint, kind, units)
        OVERRIDING SYSTEM VALUE
        SELECT v_ids[n], tollgate_ms(now()), v_day, p_bucket, p_charged_endpoint, 'charge', p_costs[n]
        FROM generate_series(1, v_admitted) AS n;
        INSERT INTO quota_usage AS u (pacific_date, bucket, endpoint, units, calls)
        VALUES (v_day, p_bucket, p_charged_endpoint, v_total, v_admitted)
        ON CONFLICT ON CONSTRAINT quota_usage_pkey DO UPDATE
            SET units = u.units + excluded.units, calls = u.calls + excluded.calls;
        UPDATE throttle_limits AS l SET admitted_at_ms = v_window || array_fill(v_now_ms, ARRAY[v_admitted])
        WHERE l.endpoint = p_endpoint;
    END IF;

    -- One row per cost, in order; the circuit's columns on each.
    IF v_found_circuit THEN
        endpoint := v_circuit.endpoint; state := v_circuit.state;
        consecutive_failures := v_circuit.consecutive_failures; consecutive_rate_limits := v_circuit.consecutive_rate_limits;
        failure_threshold := v_circuit.failure_threshold; opened_at_ms := v_circuit.opened_at_ms;
        open_until_ms := v_circuit.open_until_ms; open_duration_ms := v_circuit.open_duration_ms;
        probe_owner := v_circuit.probe_owner; probe_lease_until_ms := v_circuit.probe_lease_until_ms;
        failed_probes := v_circuit.failed_probes; trips := v_circuit.trips; updated_at_ms := v_circuit.updated_at_ms;
    END IF;
    v_used := v_first_used;
    FOR i IN 1 .. cardinality(p_costs) LOOP
        IF i <= v_admitted THEN
            v_used := v_used + p_costs[i];
            -- A warning belongs to the charge that crosses it, once a day.
            v_crossed := '{}';
            WHILE v_next_warning <= cardinality(v_thresholds)
                  AND v_used * 100 >= v_thresholds[v_next_warning] * v_bucket.daily_limit LOOP
                IF v_thresholds[v_next_warning] > v_warned THEN
                    v_crossed := v_crossed || v_thresholds[v_next_warning];
                END IF;
                v_next_warning := v_next_warning + 1;
            END LOOP;
            outcome := 'admitted'; now_ms := v_now_ms; throttle_count := v_count + i; reservation_id := v_ids[i];
            pacific_date := v_day; used_after := v_used; daily_limit := v_bucket.daily_limit; warnings := v_crossed;
            IF cardinality(v_crossed) > 0 THEN
                v_warned := v_crossed[cardinality(v_crossed)];
                v_warned_changed := true;
            END IF;
        ELSE
            outcome := 'fallback'; now_ms := NULL; throttle_count := NULL; reservation_id := NULL;
            pacific_date := NULL; used_after := NULL; daily_limit := NULL; warnings := NULL;
        END IF;
        RETURN NEXT;
    END LOOP;
    IF v_warned_changed THEN
        UPDATE quota_bucket_days AS d SET warned_percent = v_warned
        WHERE d.pacific_date = v_day AND d.bucket = p_bucket AND d.warned_percent < v_warned;
    END IF;
END
$function$;

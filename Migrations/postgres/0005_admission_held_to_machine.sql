-- Tollgate schema for PostgreSQL, version 5: the one-statement admission held to the quota rule.
--
-- tollgate_admit_batch repeats in SQL, for speed, the admission that QuotaStateMachine (TollgateCore)
-- decides for both stores; AdmissionFunctionDifferentialTests puts generated scenarios to both and
-- compares verdicts and rows. It found one difference, mended here: the function took a bucket as
-- closed by the server only when the mark ended exactly at the next Pacific midnight, so a mark set
-- while the bucket counted another window (an hour, a day in another zone) and still running after
-- the bucket came back to the Pacific day was ignored, and the function admitted what the machine
-- refuses. It now declines whenever the machine's rule closes the bucket (a mark still running that
-- ends no later than the day), and the full transaction refuses. Otherwise unchanged from version 4.

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
               -- QuotaStateMachine's rule: the server's mark closes the day while it runs and ends
               -- no later than the day does (a mark set while the bucket counted another window
               -- closes it too), not only a mark set to this day's end.
               AND NOT COALESCE(v_bucket.exhausted_until_ms > tollgate_ms(now())
                                AND v_bucket.exhausted_until_ms <= tollgate_next_reset_ms(now()), false)
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

-- Tollgate schema for PostgreSQL, version 2: the usual admission in one statement.
--
-- An admission (circuit, throttle, quota) as separate statements holds the endpoint's throttle row
-- lock across nine round trips, so one endpoint's admissions took turns at about 300 a second
-- whatever the number of machines. tollgate_admit makes the usual case (the circuit closed, the
-- endpoint's throttle and the bucket's rows present and current, a window with room, a budget
-- with room, one bucket) one statement on the server, its own transaction, holding the locks for
-- the statement alone. It answers 'admitted' with everything the client reports, or 'fallback'
-- having changed nothing but pruning the window, and the client then runs the full transaction (which creates rows,
-- moves circuits, and explains refusals). Each step is the statement the full transaction runs,
-- in the same lock order: the throttle's limits row, then the bucket's day row.

CREATE FUNCTION tollgate_admit(
    p_endpoint text, p_request_limit bigint, p_window_ms bigint,
    p_bucket text, p_charged_endpoint text, p_cost bigint, p_configured_limit bigint, p_warning_percents bigint[]
) RETURNS TABLE (
    outcome text, now_ms bigint, throttle_count bigint, reservation_id bigint, pacific_date text,
    used_after bigint, daily_limit bigint, warned_percent integer, warnings bigint[],
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
    v_day text := tollgate_pacific_date(now());
    v_used bigint;
    v_warned integer;
    v_event bigint;
    v_crossed bigint[];
BEGIN
    -- Only a closed (or never used) circuit is decided here: it allows without writing.
    SELECT * INTO v_circuit FROM circuits AS c WHERE c.endpoint = p_endpoint;
    v_found_circuit := FOUND;
    IF v_found_circuit AND v_circuit.state <> 'closed' THEN
        outcome := 'fallback'; RETURN NEXT; RETURN;
    END IF;

    -- The lock that orders this endpoint's admissions across machines; then a window read under it.
    SELECT * INTO v_limits FROM throttle_limits AS l WHERE l.endpoint = p_endpoint FOR UPDATE;
    IF NOT FOUND OR v_limits.request_limit <> p_request_limit OR v_limits.window_ms <> p_window_ms THEN
        outcome := 'fallback'; RETURN NEXT; RETURN;
    END IF;
    v_now_ms := tollgate_ms(clock_timestamp());
    DELETE FROM throttle_requests AS r WHERE r.endpoint = p_endpoint AND r.at_ms <= v_now_ms - p_window_ms;
    SELECT count(*) INTO v_count FROM throttle_requests AS r
    WHERE r.endpoint = p_endpoint AND r.at_ms > v_now_ms - p_window_ms;
    IF v_count >= p_request_limit THEN
        outcome := 'fallback'; RETURN NEXT; RETURN;
    END IF;

    -- Check and charge in one conditional upsert of the bucket's day row, as the full path does;
    -- the throttle's slot is taken only once the charge is.
    SELECT * INTO v_bucket FROM quota_buckets AS b WHERE b.bucket = p_bucket;
    IF NOT FOUND OR (v_bucket.limit_source = 'configuration' AND v_bucket.daily_limit <> p_configured_limit)
       OR v_bucket.exhausted_until_ms = tollgate_next_reset_ms(now()) OR p_cost > v_bucket.daily_limit THEN
        outcome := 'fallback'; RETURN NEXT; RETURN;
    END IF;
    INSERT INTO quota_bucket_days AS d (pacific_date, bucket, units, ceiling)
    VALUES (v_day, p_bucket, p_cost, v_bucket.daily_limit)
    ON CONFLICT ON CONSTRAINT quota_bucket_days_pkey DO UPDATE
        SET units = d.units + excluded.units, ceiling = excluded.ceiling
        WHERE d.units + excluded.units <= excluded.ceiling
    RETURNING d.units, d.warned_percent INTO v_used, v_warned;
    IF NOT FOUND THEN
        outcome := 'fallback'; RETURN NEXT; RETURN;
    END IF;
    INSERT INTO quota_events (at_ms, pacific_date, bucket, endpoint, kind, units)
    VALUES (tollgate_ms(now()), v_day, p_bucket, p_charged_endpoint, 'charge', p_cost)
    RETURNING id INTO v_event;
    INSERT INTO quota_usage AS u (pacific_date, bucket, endpoint, units, calls)
    VALUES (v_day, p_bucket, p_charged_endpoint, p_cost, 1)
    ON CONFLICT ON CONSTRAINT quota_usage_pkey DO UPDATE SET units = u.units + excluded.units, calls = u.calls + 1;
    IF v_bucket.daily_limit > 0 THEN
        v_crossed := ARRAY(SELECT p FROM unnest(p_warning_percents) AS p
                           WHERE p BETWEEN 1 AND 100 AND v_used * 100 >= p * v_bucket.daily_limit AND p > v_warned
                           ORDER BY p);
        IF cardinality(v_crossed) > 0 THEN
            UPDATE quota_bucket_days AS d SET warned_percent = GREATEST(d.warned_percent, v_crossed[cardinality(v_crossed)])
            WHERE d.pacific_date = v_day AND d.bucket = p_bucket;
        END IF;
    END IF;
    INSERT INTO throttle_requests (endpoint, at_ms) VALUES (p_endpoint, v_now_ms);

    outcome := 'admitted'; now_ms := v_now_ms; throttle_count := v_count + 1; reservation_id := v_event;
    pacific_date := v_day; used_after := v_used; daily_limit := v_bucket.daily_limit; warned_percent := v_warned;
    warnings := COALESCE(v_crossed, '{}');
    IF v_found_circuit THEN
        endpoint := v_circuit.endpoint; state := v_circuit.state;
        consecutive_failures := v_circuit.consecutive_failures; consecutive_rate_limits := v_circuit.consecutive_rate_limits;
        failure_threshold := v_circuit.failure_threshold; opened_at_ms := v_circuit.opened_at_ms;
        open_until_ms := v_circuit.open_until_ms; open_duration_ms := v_circuit.open_duration_ms;
        probe_owner := v_circuit.probe_owner; probe_lease_until_ms := v_circuit.probe_lease_until_ms;
        failed_probes := v_circuit.failed_probes; trips := v_circuit.trips; updated_at_ms := v_circuit.updated_at_ms;
    END IF;
    RETURN NEXT;
END
$function$;

-- Charges no longer look events up by day (usage rows answer that), as in SQLite's 0004.
DROP INDEX quota_events_by_day;

-- Rows updated by every charge: room on their pages lets PostgreSQL update them in place (HOT).
ALTER TABLE quota_bucket_days SET (fillfactor = 50);
ALTER TABLE quota_usage SET (fillfactor = 70);
-- One row per admitted request, deleted once it leaves the window: vacuum it often, not at 20 %.
ALTER TABLE throttle_requests SET (autovacuum_vacuum_scale_factor = 0, autovacuum_vacuum_threshold = 1000);

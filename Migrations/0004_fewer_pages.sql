-- Tollgate schema, version 4: fewer pages written per request.

-- The throttle keeps each endpoint's window in its one row: the times of the requests it admitted
-- and that are still in the window, as a JSON array of milliseconds, ascending. An admission
-- rewrites that row instead of adding a row and an index entry per request and deleting them later.
ALTER TABLE throttle_limits ADD COLUMN admitted_at_ms TEXT NOT NULL DEFAULT '[]';
UPDATE throttle_limits SET admitted_at_ms = (
    SELECT COALESCE(json_group_array(at_ms), '[]')
    FROM (SELECT at_ms FROM throttle_requests AS request
          WHERE request.endpoint = throttle_limits.endpoint ORDER BY at_ms)
);
DROP INDEX throttle_requests_window;
DROP TABLE throttle_requests;

DROP VIEW throttle_status;
CREATE VIEW throttle_status AS
WITH clock AS (SELECT now_ms FROM pacific_clock), counted AS (
    SELECT limits.endpoint, limits.window_ms, limits.request_limit,
           (SELECT COUNT(*) FROM json_each(limits.admitted_at_ms) AS admitted
             WHERE admitted.value > clock.now_ms - limits.window_ms)
           AS current_count
    FROM throttle_limits AS limits CROSS JOIN clock
)
SELECT endpoint, window_ms / 1000.0 AS window_seconds, request_limit, current_count,
       MAX(request_limit - current_count, 0) AS remaining
FROM counted
ORDER BY endpoint;

-- An index written by every charge but read only by an operator's reset or reconciliation of a
-- day, which may as well read the whole table (the audit and the burn rate always did).
DROP INDEX quota_events_by_day;

-- A refund looks up the further charges of its reservation (an endpoint charged in several
-- buckets) by reservation_id: without an index that was a scan of every event on each refund.
-- Only refunds and further charges carry a reservation_id, so plain charges write nothing here.
CREATE INDEX quota_events_by_reservation ON quota_events (reservation_id) WHERE reservation_id IS NOT NULL;

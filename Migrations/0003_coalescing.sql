-- Tollgate schema, version 3: identical requests in flight at once reach the API once.
-- The process whose request leads holds a lease on the resource key until it has stored the
-- answer; the others wait for that answer. A lease expires, so a leader that died holds no one
-- up for longer than expires_ms - started_ms.
CREATE TABLE cache_leases (
    resource_key TEXT PRIMARY KEY,
    holder       TEXT NOT NULL,
    started_ms   INTEGER NOT NULL,
    expires_ms   INTEGER NOT NULL CHECK (expires_ms >= started_ms)
) STRICT, WITHOUT ROWID;

-- Answers that waited for another request's answer instead of sending their own.
ALTER TABLE cache_stats_daily ADD COLUMN coalesced INTEGER NOT NULL DEFAULT 0 CHECK (coalesced >= 0);

-- The view gains the column at its end; a coalesced answer counts as a hit in the hit rate.
DROP VIEW cache_stats;
CREATE VIEW cache_stats AS
SELECT pacific_date, endpoint, hits, revalidations, misses, stale,
       ROUND(CAST(hits + revalidations + coalesced AS REAL)
             / NULLIF(hits + revalidations + coalesced + misses, 0), 4) AS hit_rate,
       bytes_saved, coalesced
FROM cache_stats_daily
ORDER BY pacific_date DESC, endpoint;

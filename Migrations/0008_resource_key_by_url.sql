-- Tollgate schema, version 8: a resource's key begins with its URL, and the URL index is gone.
--
-- An unsafe method invalidates every entry stored for its URL (RFC 9111 §4.4), which an index on
-- cache_entries (url) found. Every store moved that index's entry as well as the key's and the
-- LRU's: two of the eight pages a store at capacity writes (through the C API on 3.40, a store's
-- statements took 43-45 µs with it and 36-37 µs without). A key is now the URL, a line feed and
-- the digest it was (CacheResourceKey in TollgateCore), so one URL's entries are a range of the
-- key's own unique index. Each stored key is rewritten that way, so every entry is found as before.
-- A coalescing lease lives seconds and names a key in the old spelling: leases are dropped, and a
-- request that held one goes on without it.
UPDATE cache_entries SET resource_key = url || char(10) || resource_key;
DELETE FROM cache_leases;
DROP INDEX cache_entries_by_url;
-- A key made another way (a program calling the store itself) is still found by its URL, through
-- an index that holds such keys only: the library's own keys never enter it, so it costs their
-- stores nothing.
CREATE INDEX cache_entries_by_url_unkeyed ON cache_entries (url)
    WHERE substr(resource_key, 1, length(url) + 1) <> url || char(10);

-- Tollgate PostgreSQL schema, version 6: a resource's key begins with its URL.
--
-- The key is computed by the library, the same for both stores (CacheResourceKey in
-- TollgateCore): the URL, a line feed and the digest it was. Each stored key is rewritten that
-- way, so every entry is found as before; a coalescing lease names a key in the old spelling and
-- lives seconds, so leases are dropped. The URL index stays: a text index's order follows the
-- database's collation, so a range of keys is not one URL's here, and a fleet's costs are round
-- trips, not pages.
UPDATE cache_entries SET resource_key = url || E'\n' || resource_key;
DELETE FROM cache_leases;

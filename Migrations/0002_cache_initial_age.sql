-- Tollgate schema, version 2: the age a stored response already had when it arrived.
-- RFC 9111 §4.2.3: corrected_initial_age = max(now - Date, Age + response delay), taken when the
-- response is stored or revalidated (validated_at_ms). The current age of an entry is then
-- initial_age_ms + (now - validated_at_ms); every answer served from the cache carries it as Age.
-- Entries stored before this migration count from 0, as they always did.
ALTER TABLE cache_entries ADD COLUMN initial_age_ms INTEGER NOT NULL DEFAULT 0 CHECK (initial_age_ms >= 0);

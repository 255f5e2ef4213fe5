-- Catalog schema, step 4 (2026-12-05): arrays are numbered in the order they are added,
-- and series rows name their arrays by that number.
-- The arrays table was keyed by its random 32-byte content hashes, and the series table
-- indexed by them (ts_data_hash): past 10^5 series every add touched nearly every leaf
-- of both B-trees. Now `arrays.id` is an INTEGER PRIMARY KEY (new rows append at the
-- tree's right edge); the content hash stays the identity, unique behind the narrow
-- index arrays_key; series rows hold data_id and timestamps_id instead of the hashes.
-- Everything below is one transaction (the store runs every step in one): a kill at
-- any instant leaves the catalog of step 3 or this one, never a mix.

CREATE TABLE arrays_by_id (
    id INTEGER PRIMARY KEY,
    hash BLOB NOT NULL,
    kind TEXT NOT NULL CHECK (kind IN ('data', 'timestamps')),
    dtype TEXT NOT NULL,
    shape TEXT NOT NULL,
    pool TEXT NOT NULL,
    slot INTEGER NOT NULL,
    segment TEXT NOT NULL DEFAULT ''
);

-- Numbered in the order the series that first named them were added; arrays no series
-- names (none in a sound store) last, in their segment's order.
INSERT INTO arrays_by_id (hash, kind, dtype, shape, pool, slot, segment)
SELECT a.hash, a.kind, a.dtype, a.shape, a.pool, a.slot, a.segment
FROM arrays a
LEFT JOIN (
    SELECT data_hash AS hash, 'data' AS kind, min(id) AS first
    FROM time_series_associations GROUP BY data_hash
    UNION ALL
    SELECT timestamps_hash, 'timestamps', min(id)
    FROM time_series_associations WHERE timestamps_hash IS NOT NULL GROUP BY timestamps_hash
) u ON u.hash = a.hash AND u.kind = a.kind
ORDER BY u.first IS NULL, u.first, a.kind, a.segment, a.pool, a.slot;

DROP TABLE arrays;
ALTER TABLE arrays_by_id RENAME TO arrays;
CREATE UNIQUE INDEX arrays_key ON arrays (hash, kind);
CREATE INDEX arrays_segment ON arrays (segment, pool, slot);

CREATE TABLE series_by_id (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    owner_id INTEGER NOT NULL,
    owner_type TEXT NOT NULL,
    owner_category INTEGER NOT NULL CHECK (owner_category IN (0, 1)),
    time_series_type INTEGER NOT NULL CHECK (typeof(time_series_type) = 'integer' AND time_series_type >= 0),
    name TEXT NOT NULL,
    initial_timestamp TEXT,
    initial_ms INTEGER,
    resolution TEXT,
    length INTEGER NOT NULL,
    horizon TEXT,
    interval TEXT,
    count INTEGER,
    timestamps_id INTEGER,
    units TEXT,
    quantity_kind TEXT,
    unit_system TEXT,
    time_reference TEXT,
    component_field TEXT,
    percentiles_json TEXT,
    element_type TEXT NOT NULL DEFAULT 'f64',
    element_shape TEXT NOT NULL,
    array_shape TEXT NOT NULL,
    application_data TEXT,
    data_id INTEGER NOT NULL,
    features_hash BLOB NOT NULL,
    row_check INTEGER NOT NULL DEFAULT 0
);

-- The checksum now covers the ids (rowcheck.CHECKED_COLUMNS). A row that matched its
-- step-3 checksum gets the new one; a row that did not stays damage (its new checksum
-- off by one, which no CRC-32 equals), and a row whose array the catalog lacks names id
-- 0 (no array's): verify names both, repair restores them from the segments' records.
INSERT INTO series_by_id (
    id, owner_id, owner_type, owner_category, time_series_type, name, initial_timestamp,
    initial_ms, resolution, length, horizon, interval, count, timestamps_id, units,
    quantity_kind, unit_system, time_reference, component_field, percentiles_json,
    element_type, element_shape, array_shape, application_data, data_id, features_hash,
    row_check
)
SELECT
    id, owner_id, owner_type, owner_category, time_series_type, name, initial_timestamp,
    initial_ms, resolution, length, horizon, interval, count, timestamps_id, units,
    quantity_kind, unit_system, time_reference, component_field, percentiles_json,
    element_type, element_shape, array_shape, application_data, data_id, features_hash,
    infrastore_row_check(
        id, owner_id, owner_type, owner_category, time_series_type, name, initial_timestamp,
        initial_ms, resolution, length, horizon, interval, count, timestamps_id, units,
        quantity_kind, unit_system, component_field, application_data, time_reference,
        percentiles_json, element_type, element_shape, array_shape, data_id, features_hash
    ) + (row_check != infrastore_row_check(
        id, owner_id, owner_type, owner_category, time_series_type, name, initial_timestamp,
        initial_ms, resolution, length, horizon, interval, count, timestamps_hash, units,
        quantity_kind, unit_system, component_field, application_data, time_reference,
        percentiles_json, element_type, element_shape, array_shape, data_hash, features_hash
    ) OR data_id = 0 OR COALESCE(timestamps_id = 0, 0))
FROM (
    SELECT t.*, COALESCE(a.id, 0) AS data_id,
        CASE WHEN t.timestamps_hash IS NULL THEN NULL ELSE COALESCE(s.id, 0) END AS timestamps_id
    FROM time_series_associations t
    LEFT JOIN arrays a ON a.hash = t.data_hash AND a.kind = 'data'
    LEFT JOIN arrays s ON s.hash = t.timestamps_hash AND s.kind = 'timestamps'
)
ORDER BY id;

-- The ids never used again: the numbering goes on past the highest id ever given.
UPDATE sqlite_sequence SET seq = max(seq, COALESCE((
    SELECT seq FROM sqlite_sequence WHERE name = 'time_series_associations'), 0))
WHERE name = 'series_by_id';
INSERT INTO sqlite_sequence (name, seq)
    SELECT 'series_by_id', seq FROM sqlite_sequence
    WHERE name = 'time_series_associations'
    AND NOT EXISTS (SELECT 1 FROM sqlite_sequence WHERE name = 'series_by_id');

DROP TABLE time_series_associations;
ALTER TABLE series_by_id RENAME TO time_series_associations;

CREATE UNIQUE INDEX ts_identity ON time_series_associations (
    owner_id, owner_category, time_series_type, name,
    COALESCE(resolution, ''), COALESCE(interval, ''), features_hash
);
CREATE INDEX ts_data_id ON time_series_associations (data_id);
CREATE INDEX ts_owner ON time_series_associations (owner_id, owner_category);
CREATE INDEX ts_type ON time_series_associations (time_series_type);
CREATE INDEX ts_name ON time_series_associations (name);
CREATE INDEX ts_timestamps_id ON time_series_associations (timestamps_id)
    WHERE timestamps_id IS NOT NULL;

-- Catalog schema, step 1: series rows, feature maps, array and time-axis locations.
-- The series table keeps the reference's column names and codes so that the same
-- questions (by owner, by type, by hash) are the same SQL on both catalogs.

CREATE TABLE time_series_associations (
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
    timestamps_hash BLOB,
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
    data_hash BLOB NOT NULL,
    features_hash BLOB NOT NULL
);

-- Identity: NULL resolution/interval must collide, hence the COALESCE.
CREATE UNIQUE INDEX ts_identity ON time_series_associations (
    owner_id, owner_category, time_series_type, name,
    COALESCE(resolution, ''), COALESCE(interval, ''), features_hash
);
CREATE INDEX ts_data_hash ON time_series_associations (data_hash);
CREATE INDEX ts_owner ON time_series_associations (owner_id, owner_category);
CREATE INDEX ts_type ON time_series_associations (time_series_type);
CREATE INDEX ts_name ON time_series_associations (name);
CREATE INDEX ts_timestamps_hash ON time_series_associations (timestamps_hash)
    WHERE timestamps_hash IS NOT NULL;

-- One copy per distinct feature map; the JSON form answers reads without a pivot.
CREATE TABLE feature_maps (
    features_hash BLOB PRIMARY KEY,
    features_json TEXT NOT NULL
) WITHOUT ROWID;

CREATE TABLE feature_sets (
    features_hash BLOB NOT NULL,
    key TEXT NOT NULL,
    value_kind TEXT NOT NULL CHECK (value_kind IN ('int', 'float', 'bool', 'str')),
    value_int INTEGER,
    value_float REAL,
    value_bool INTEGER,
    value_str TEXT,
    PRIMARY KEY (features_hash, key)
) WITHOUT ROWID;

-- Where each distinct array (kind 'data') or irregular time axis (kind 'timestamps')
-- lives in the HDF5 file: a row (slot) of a pool dataset holding arrays of one dtype
-- and shape. A zero-size array has no pool (pool = '').
CREATE TABLE arrays (
    hash BLOB NOT NULL,
    kind TEXT NOT NULL CHECK (kind IN ('data', 'timestamps')),
    dtype TEXT NOT NULL,
    shape TEXT NOT NULL,
    pool TEXT NOT NULL,
    slot INTEGER NOT NULL,
    PRIMARY KEY (hash, kind)
) WITHOUT ROWID;

-- Slots are only ever appended, never reused before compact(): a slot freed in a
-- transaction that rolls back still holds the data its restored rows point at.
CREATE TABLE pools (
    name TEXT PRIMARY KEY,
    dtype TEXT NOT NULL,
    shape TEXT NOT NULL,
    next_slot INTEGER NOT NULL
) WITHOUT ROWID;

CREATE TABLE store_attributes (
    key TEXT PRIMARY KEY,
    value TEXT NOT NULL
) WITHOUT ROWID;

-- Catalog schema, step 3: each series row carries a checksum over its id and fields.
-- row_check is the CRC-32 of the row's id and every other column but itself, packed
-- canonically (infrastore_sqlite/store/rowcheck.py); every read that returns rows to a
-- caller compares it, so a flipped byte in a name or a hash is damage, never the truth.
-- The rows already held get theirs here, in this step's one transaction, from the
-- function the store registers on its connection (infrastore_row_check): after it no
-- row is unchecked, and a missing or zero checksum is damage like any other mismatch.

ALTER TABLE time_series_associations ADD COLUMN row_check INTEGER NOT NULL DEFAULT 0;

UPDATE time_series_associations SET row_check = infrastore_row_check(
    id, owner_id, owner_type, owner_category, time_series_type, name, initial_timestamp,
    initial_ms, resolution, length, horizon, interval, count, timestamps_hash, units,
    quantity_kind, unit_system, component_field, application_data, time_reference,
    percentiles_json, element_type, element_shape, array_shape, data_hash, features_hash
);

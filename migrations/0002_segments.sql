-- Catalog schema, step 2: arrays live in immutable segment files.
-- A store is a directory: this catalog plus segments/<name>.h5. Each write transaction
-- puts the arrays it adds into one new segment file, which is complete and fsynced
-- before the commit that first names it here; a segment is never modified afterwards,
-- only replaced (merged, compacted) by a later commit. So the catalog commit is the only
-- point at which a write becomes visible, and no failure can damage committed arrays.

-- name: the file in segments/; bytes: its size (merging picks segments of similar size);
-- slots: how many arrays were written into it (live or not); pools: the JSON list of its
-- pool datasets (what compact() reports as dropped).
CREATE TABLE segments (
    name TEXT PRIMARY KEY,
    bytes INTEGER NOT NULL,
    slots INTEGER NOT NULL,
    pools TEXT NOT NULL
) WITHOUT ROWID;

ALTER TABLE arrays ADD COLUMN segment TEXT NOT NULL DEFAULT '';
CREATE INDEX arrays_segment ON arrays (segment, pool, slot);

-- A store of the two-file layout becomes one directory whose only segment is its old
-- HDF5 file (renamed legacy.h5, never written again); the store fills in its size.
INSERT INTO segments (name, bytes, slots, pools)
    SELECT 'legacy.h5', 0, COALESCE(sum(next_slot), 0), json_group_array(name)
    FROM pools HAVING count(*) > 0;
UPDATE arrays SET segment = 'legacy.h5' WHERE pool != '';

-- Slots are counted per segment now.
DROP TABLE pools;

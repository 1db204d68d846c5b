-- A stream's snapshot no longer carries the sizes of its unread records (one per
-- record above the slowest ack: rewriting them on every commit made each append
-- cost as much as the unread window is long). They are read back from the records
-- above this column on load. Existing rows take it from their snapshot.
ALTER TABLE streams ADD COLUMN unread_floor bigint NOT NULL DEFAULT 0;

UPDATE streams
SET unread_floor = (convert_from(snapshot, 'UTF8')::jsonb -> 'state' ->> 'unread_floor')::bigint
WHERE convert_from(snapshot, 'UTF8')::jsonb -> 'state' ? 'unread_floor';

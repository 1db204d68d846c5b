-- Every record stores the stream's byte offset through itself: the running total of
-- the sizes of the stream's records up to and including it (ADR 0047). Unread bytes
-- are then the offset at the head less the offset at the unread floor, two numbers
-- the stream's snapshot keeps, instead of one size per unread record.
--
-- Expand only (ADR 0027): the column is nullable and has no default, so the release
-- before this one keeps inserting records (through `runnel_record`, which is not
-- changed) and leaves it NULL. A NULL offset is read as what the stream's head offset
-- leaves once the sizes of every record above it are taken off
-- (`adapters/postgres/unit_of_work.py`); this release writes every record's offset
-- through `runnel_record_v2`.
ALTER TABLE records ADD COLUMN byte_offset bigint;

-- Existing records: offsets from a base of 0 just below each stream's earliest retained
-- record. Pruned records are gone and so count for nothing: any base will do as long as
-- it is one per stream, and a stream snapshotted before this migration takes its head
-- offset from these rows when it is first loaded (`Stream.upcast_v2_v3`).
UPDATE records AS r SET byte_offset = o.through
FROM (SELECT stream, sequence,
             sum(size) OVER (PARTITION BY stream ORDER BY sequence) AS through
      FROM records) AS o
WHERE r.stream = o.stream AND r.sequence = o.sequence;

-- The shape in which this release hands records to the insert: `runnel_record` and
-- the byte offset.
CREATE TYPE runnel_record_v2 AS (
    stream              uuid,
    sequence            bigint,
    content_type        text,
    appended_at         timestamptz,
    size                integer,
    payload             json,
    data                bytea,
    object_id           text,
    object_size         bigint,
    object_sha256       text,
    object_content_type text,
    idempotency_key     text,
    byte_offset         bigint
);

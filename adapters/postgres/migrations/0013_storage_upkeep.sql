-- Storage upkeep (ADR 0032): what the maintenance leader's bounded deletes scan by.
-- Migrations run in one transaction, so these indexes are built without CONCURRENTLY:
-- the build holds a SHARE lock on its table (writes wait, reads go on). On a large
-- database, build them by hand with CREATE INDEX CONCURRENTLY under the same names
-- before upgrading, and this migration finds them (IF NOT EXISTS).
--
-- A receipt knows when it was recorded, for its TTL. A constant-for-the-statement
-- default, so the column is added without rewriting the table; rows recorded before
-- it take the upgrade's time (their TTL starts then). Writers of the previous release
-- leave the column out and get the default.
ALTER TABLE append_receipts ADD COLUMN IF NOT EXISTS created_at timestamptz NOT NULL
    DEFAULT now();
-- Receipts by sequence: those below `earliest`, and the oldest ones, are a range.
CREATE INDEX IF NOT EXISTS append_receipts_by_sequence ON append_receipts (stream, sequence);
-- Finished input deliveries, oldest first.
CREATE INDEX IF NOT EXISTS input_deliveries_finished ON input_deliveries (created_at)
    WHERE done;
-- Gap evidence, oldest first.
CREATE INDEX IF NOT EXISTS gap_evidence_by_age ON gap_evidence (recorded_at);

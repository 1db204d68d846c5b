-- Placing a legal hold waits for the deletions of its stream that a worker has
-- claimed (one may be deleting a body right now): find them without a scan.
CREATE INDEX deletion_outbox_claimed ON deletion_outbox (stream) WHERE claimed_by IS NOT NULL;

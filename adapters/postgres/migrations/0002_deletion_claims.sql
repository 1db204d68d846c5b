-- The deletion outbox gets what its worker needs: the owning stream (whose legal
-- hold postpones a deletion; NULL for an orphan body no stream owns) and a
-- claim with a lease, like input deliveries, so a dead worker's rows come back.
ALTER TABLE deletion_outbox
    ADD COLUMN stream      uuid,
    ADD COLUMN claimed_by  text,
    ADD COLUMN lease_until timestamptz;

CREATE INDEX deletion_outbox_due ON deletion_outbox (not_before, id);
